"""A live cluster, read from `kubectl get ... -o yaml`: the snapshot, its label vocabulary, import and drift.

Facts that `simulate --cluster` needs from a snapshot stay in `gpustack/simulate/` (they are simulation).
"""
