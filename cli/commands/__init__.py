"""One module per verb. Importing this package registers every command.

The import order is the order of ``loopscope --help`` within each panel
(panels: ``loopscope.cli.app.PANELS``).
"""

from loopscope.cli.commands import load  # noqa: F401
from loopscope.cli.commands import metrics  # noqa: F401
from loopscope.cli.commands import quarantine  # noqa: F401
from loopscope.cli.commands import export  # noqa: F401
from loopscope.cli.commands import unrecovered  # noqa: F401
from loopscope.cli.commands import triage  # noqa: F401
from loopscope.cli.commands import lint  # noqa: F401
from loopscope.cli.commands import audit  # noqa: F401
from loopscope.cli.commands import review  # noqa: F401
from loopscope.cli.commands import compare  # noqa: F401
from loopscope.cli.commands import check  # noqa: F401
from loopscope.cli.commands import demo  # noqa: F401
