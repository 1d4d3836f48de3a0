from strixwizard.cli import main

raise SystemExit(main())
