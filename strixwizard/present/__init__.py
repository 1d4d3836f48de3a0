"""How results look: the renderers both front doors share (doctor text, Markdown, HTML with its
charts, Prometheus, fix previews, measurement results) and the pieces a deploy stack renders
its own plan with. The CLI, the wizard and the stacks import it; it sits below the deploy
stacks and above the engines whose results it renders, so it knows no stack by name (a plan
is rendered by its stack, through these pieces), and it never imports Textual."""
