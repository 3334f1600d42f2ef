"""Console script: ``loopedlm experiment=smoke|quick|paper|bench key=value ...`` and
``loopedlm analyze model=DIR text.path=FILE [num_recurrences=32]`` (trace a saved model on your prompts)."""

from loopedlm.run import run
from loopedlm.verbs import run_analyze
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("loopedlm", run, verbs={"analyze": run_analyze})

if __name__ == "__main__":
    main()
