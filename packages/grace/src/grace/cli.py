"""Console script: ``grace experiment=smoke|quick|paper|bench key=value ...`` and
``grace decompose data.path=FILE [dictionary.path=FILE] [l0=4] [model=grace.pt]`` (decompose your own embeddings)."""

from grace.run import run
from grace.verbs import run_decompose
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("grace", run, verbs={"decompose": run_decompose})

if __name__ == "__main__":
    main()
