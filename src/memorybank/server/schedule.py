"""Jobs the server runs on a timer: seed 000's periodic consolidation of duplicates."""

from __future__ import annotations

import logging
from datetime import timedelta

import anyio
import anyio.to_thread

from memorybank.core.bank import MemoryBank
from memorybank.core.consolidate import RoleOf, run_scheduled

log = logging.getLogger(__name__)

#: The longest the job sleeps between looks at whether a run is due.
_LONGEST_NAP = 3600.0


async def consolidation_loop(bank: MemoryBank, every: timedelta, roles: RoleOf) -> None:
    """Merge duplicates in every scope each ``every`` (the last run is kept in the store, so
    a restart does not run it early and several workers run it once), retiring only what the
    newer fact's author could have (``roles``: the accounts). Runs until cancelled; a failed
    run is logged and tried again at the next look."""
    while True:
        try:
            merged = await anyio.to_thread.run_sync(
                run_scheduled, bank.store, every, roles, bank.judge
            )
        except Exception:
            log.exception("scheduled consolidation failed")
        else:
            if merged:
                count = sum(c.merged_count for c in merged)
                log.info("consolidation merged %d memories in %d scopes", count, len(merged))
        await anyio.sleep(min(every.total_seconds(), _LONGEST_NAP))


__all__ = ["consolidation_loop"]
