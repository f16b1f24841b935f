"""testbed: run infrastructure tasks for agents on real virtual machines."""

import warnings

# asyncssh (2.24) still names DSA key types at import, and cryptography 51 warns about that on
# every import: a line on stderr before every command's own output, which users and scripts
# reading `testbed launch`'s first line ("job ID") took for testbed's. testbed never offers or
# accepts DSA keys, so the warning says nothing about it; only that one warning is silenced.
warnings.filterwarnings("ignore", message="DSA is deprecated", module=r"asyncssh\.")

__version__ = "0.1.0"
