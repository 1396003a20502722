"""Deprecated alias of :mod:`mybinlog.replication.verification`, the comparison with the replica now split by concern
into a package. It re-exports the same names and will be removed in the next release: import from
``mybinlog.replication.verification`` (:func:`mybinlog.replication.verify` itself is unchanged). The command line
(``add_verify_arguments``, ``run_verify``) moved to mybinlog/cli/_verify.py and is not aliased here: replication
does not import the command line.
"""

from __future__ import annotations

import warnings

from .verification import *  # noqa: F403
from .verification import __all__ as __all__

warnings.warn(
    "mybinlog.replication._verify is deprecated: import from mybinlog.replication.verification",
    DeprecationWarning,
    stacklevel=2,
)
