"""Fleets: one file listing many clusters, each compiled to a folder of its own and delivered by Argo CD or Flux.

`reading` loads and checks the fleet file (its own schema, gpustack's hardened loader); `overlay` merges a cluster's
overlay into the base blueprint, remembering where each merged value was written; `resolve` turns a cluster into the
`Validation` of its blueprint, with diagnostics at the overlay's line and the base line it touches; `delivery` writes
the Argo CD ApplicationSet or the Flux Kustomizations; `compiling` compiles every cluster in parallel.
"""
