"""Console script: ``malora experiment=smoke|quick|paper|bench key=value ...`` and
``malora merge model=DIR adapters=[DIR,...] calibration=CAL.npz out=DIR`` (MaLoRA-merge saved PEFT adapters)."""

from malora.merge_cli import run_merge
from malora.run import run
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("malora", run, verbs={"merge": run_merge})

if __name__ == "__main__":
    main()
