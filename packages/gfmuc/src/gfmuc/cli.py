"""Console script: ``gfmuc experiment=smoke|quick|paper|bench key=value ...`` and
``gfmuc cluster data.path=FILE n_clusters=K [checkpoint=FILE]`` (cluster a user's graph, with a saved model)."""

from gfmuc.run import run
from gfmuc.verbs import run_cluster
from paperworks.hydra_glue import hydra_cli

main = hydra_cli("gfmuc", run, verbs={"cluster": run_cluster})

if __name__ == "__main__":
    main()
