"""What running pods depend on.

Which workloads run where, which taints they tolerate, which resource names a pool advertises.
"""

from __future__ import annotations

from collections.abc import Iterable

from gpustack.model import NodePool, SharingStrategy, Taint
from gpustack.review.risks.wording import sorted_names
from gpustack.review.snapshot import Snapshot
from gpustack.taints import toleration_for


def running_on(before: Snapshot, pools: Iterable[str]) -> tuple[str, ...]:
    """Workloads the old version runs on these pools: their pods are the ones a change can hit."""
    return sorted_names(w for pool in pools for w in before.workloads_on(pool))


def taint_key(taint: Taint) -> tuple[str, str | None, str]:
    return (taint.key, taint.value, taint.effect)


def tolerated(pool: NodePool | None, taint: Taint) -> bool:
    """Whether pods made for `pool` (gpustack tolerates exactly its pool's taints) tolerate `taint`."""
    if pool is None:
        return False
    return any(toleration_for(own).tolerates(taint) for own in pool.taints)


def naming(pool: NodePool) -> tuple[str, bool, str | None]:
    """What decides the advertised resource names (besides the MIG layout, which mig-repartition covers)."""
    sharing = pool.sharing
    rename = sharing.replication.rename_by_default if sharing.replication is not None else False
    mig = str(sharing.mig.strategy) if sharing.mig is not None and sharing.strategy is SharingStrategy.MIG else None
    if mig is not None and sharing.mig is not None and sharing.mig.time_slicing is not None:
        # Time-sliced instances keep their names unless renamed (mig-1g.10gb -> mig-1g.10gb.shared).
        rename = sharing.mig.time_slicing.rename_by_default
        mig += " time-sliced"
        if sharing.mig.time_slicing.per_profile:  # under renameByDefault, which names get .shared
            mig += " (" + ", ".join(sorted(profile for profile, _ in sharing.mig.time_slicing.per_profile)) + ")"
    return (str(sharing.strategy), rename, mig)


def naming_text(pool: NodePool) -> str:
    strategy, rename, mig = naming(pool)
    if mig is not None:
        return f"mig {mig}" + (" with renameByDefault" if rename else "")
    return f"{strategy} with renameByDefault" if rename else strategy
