"""python -m customgrad"""

import sys

from customgrad.cli import main

sys.exit(main())
