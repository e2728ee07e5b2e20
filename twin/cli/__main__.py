import sys

from twin.cli.main import main

sys.exit(main())
