"""Console script: ``lvqmark experiment=smoke|quick|paper|bench key=value ...`` and
``lvqmark detect model=FILE data.path=CSV`` (a saved LVQMark scores a user's series, no training data)."""

from lvqmark.run import run
from lvqmark.verbs import run_detect
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("lvqmark", run, verbs={"detect": run_detect})

if __name__ == "__main__":
    main()
