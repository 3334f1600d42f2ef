"""Console script: ``latentwam experiment=smoke|quick|paper|bench key=value ...``,
``latentwam train data.path=LEROBOT_ROOT data.image_key=KEY`` and ``latentwam evaluate model=FILE``."""

from latentwam.run import run
from latentwam.verbs import run_evaluate, run_train
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("latentwam", run, verbs={"train": run_train, "evaluate": run_evaluate})

if __name__ == "__main__":
    main()
