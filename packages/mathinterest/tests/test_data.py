import pytest
from mathinterest import load_ratings
from mathinterest.data import RatingsFileError, problems_frame


def test_load_ratings_skips_and_counts_bad_rows(tmp_path):
    f = tmp_path / "r.csv"
    f.write_text("problem_id,population,rater_id,rating,rationale\n"
                 "p1,crowd,a,5,elegant\np1,crowd,b,9,\np2,imo,c,x,\np2,imo,d,3,\n,imo,e,4,\np3,crowd,a,7,\n")
    df = load_ratings(f)
    assert list(df.columns) == ["problem_id", "population", "rater_id", "rating", "rationale"]
    assert len(df) == 3 and df.attrs["skipped"] == 3 and df.attrs["skipped_lines"] == [3, 4, 6]
    assert df.rating.tolist() == [5, 3, 7]
    with pytest.raises(ValueError, match="unknown population"):
        load_ratings(f, populations=["crowd"])


def test_load_ratings_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_ratings(tmp_path / "nope.csv")
    f = tmp_path / "r.csv"
    f.write_text("problem_id,rating\np1,3\n")
    with pytest.raises(RatingsFileError, match="missing column"):
        load_ratings(f)
    f.write_text("problem_id,population,rater_id,rating\np1,crowd,a,0\n")
    with pytest.raises(RatingsFileError, match="no valid"):
        load_ratings(f)


def test_problems_frame_forms():
    assert problems_frame(["a", "b"]).problem_id.tolist() == ["q0", "q1"]
    assert problems_frame([{"problem_id": 7, "text": "t"}]).problem_id.tolist() == ["7"]
    with pytest.raises(TypeError):
        problems_frame("just a string")
    with pytest.raises(ValueError, match="duplicate"):
        problems_frame([{"problem_id": 1, "text": "a"}, {"problem_id": 1, "text": "b"}])
