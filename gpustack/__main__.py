"""`python -m gpustack`."""

from gpustack.cli import main

main()
