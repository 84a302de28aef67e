"""Review of a blueprint change: what changed, what it does to capacity, what it risks, and the manifest delta.

Kept empty so that `gpustack graph`, which only needs `layouts`, does not import the compiler.
"""
