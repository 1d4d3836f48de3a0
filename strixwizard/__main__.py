from strixwizard.cli.main import main

raise SystemExit(main())
