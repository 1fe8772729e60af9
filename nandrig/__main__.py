import sys

from nandrig.cli import main

sys.exit(main())
