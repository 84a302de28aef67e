"""`gpustack rollout`: a reviewed blueprint change turned into an ordered, resumable plan of node waves."""
