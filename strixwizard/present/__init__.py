"""How results look: every renderer both front doors share (doctor text, Markdown, HTML with
its charts, Prometheus, fix and deploy previews, measurement results). The CLI and the wizard
import it; it imports the engines' result types and nothing from `cli` or `tui`, and no
Textual."""
