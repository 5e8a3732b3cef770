import sys

from lc0py.cli.main import main

sys.exit(main())
