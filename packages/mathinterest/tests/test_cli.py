from mathinterest.run import run

from paperworks.testing import run_cli, smoke_without_matplotlib


def test_smoke_cli_writes_results(tmp_path):
    doc = run_cli("mathinterest", tmp_path / "run")
    assert doc["package"] == "mathinterest" and doc["experiment"] == "smoke"
    ids = {c["id"] for c in doc["claims"]}
    assert {"sim_j1_fails_w1", "sim_j4_fails_rationales", "claim5_generated_engaging"} <= ids
    assert all(c["verdict"] == "inconclusive" for c in doc["claims"] if c["id"].startswith("claim"))
    assert all(c["verdict"] == "supported" for c in doc["checks"])
    assert (tmp_path / "run" / "metrics.csv").exists()


def test_users_ratings_and_saved_model_without_matplotlib(tmp_path, study, tiny, monkeypatch):
    """A user's ratings file and a saved local model (rater.kind=hf) through the CLI's config; the run
    still writes its results without matplotlib."""
    from paperworks.lm import save_local

    save_local(tmp_path / "model", *tiny)
    humans = study.ratings()
    humans.to_csv(tmp_path / "ratings.csv", index=False)
    with open(tmp_path / "ratings.csv", "a") as f:
        f.write("s000,crowd,zz,8,\n")  # off the scale: skipped and counted
    study.problems()[["problem_id", "text"]].to_csv(tmp_path / "problems.csv", index=False)
    over = ("experiment=smoke", f"data.ratings={tmp_path / 'ratings.csv'}", f"data.problems={tmp_path / 'problems.csv'}",
            "rater=hf", f"rater.model={tmp_path / 'model'}")
    doc = smoke_without_matplotlib("mathinterest", run, monkeypatch, tmp_path / "out", overrides=over)
    assert doc["experiment"] == "smoke"
    assert doc["extra"]["skipped_rows"] == 1
    c1 = next(c for c in doc["claims"] if c["id"] == "claim1_rho_positive_imo")
    met = {r["what"]: r["met"] for r in c1["rule"]["requires"]}
    assert met["real human ratings supplied (data.ratings=)"] and met["a real LLM rater (rater=hf|openai)"]
    c5 = next(c for c in doc["claims"] if c["id"] == "claim5_generated_engaging")
    assert c5["verdict"] == "inconclusive"  # no LLM-generated problems supplied (data.generated=)
