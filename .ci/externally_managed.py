"""Exit 0 when this Python is a system's own, externally managed one (PEP 668), where pip may not
install: .ci/setup then makes a virtual environment for regrade. Exit 1 anywhere else (a venv,
pyenv, conda, or a system Python without the EXTERNALLY-MANAGED marker)."""

import os
import sys
import sysconfig

managed = os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED"))
sys.exit(0 if managed and sys.prefix == sys.base_prefix else 1)
