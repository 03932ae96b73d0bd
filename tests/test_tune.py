"""Tuning (engine.tune): the space from declared options, successive halving's rungs and
rule, the front and the pick, the seeded split, the randomization test, and a whole search
over a toy paradigm whose cost grows with what it reads: trials stopped early, stored ones
resumed, a cancelled trial dropped, the picks checked on held-out questions."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from engine.config import param
from engine.documents import Corpus, Document, Question
from engine.errors import ConfigError
from engine.paradigms.base import ParadigmSpec
from engine.trace import LLMStep
from engine.tune.halving import Point, front, fronts, goes_on, knee, pick, rungs
from engine.tune.held_out import randomization_p, split, with_verdicts
from engine.tune.search import COMPLETE, REFUSED, STOPPED, Search, SearchPlan
from engine.tune.space import default_space, dimension, space
from engine.tune.tuning import tune
from tests.conftest import TINY_DOCS
from tests.fakes import EchoParadigm

# --- the space -------------------------------------------------------------------------------


def test_the_default_space_leaves_out_builds_diagnostics_free_text_and_an_unread_reader():
    flat = {d.option: d for d in default_space("flat", reads=False)}
    # passage_tokens and bi_encoder build; the sentence cut only matters to the reader
    assert set(flat) == {"M", "k", "retriever"}
    assert flat["M"].log and (flat["M"].low, flat["M"].high) == (1, 1000)
    assert flat["retriever"].choices == ("dense", "bm25")
    read = {d.option: d for d in default_space("flat", reads=True)}
    assert {"reader.prompt", "reader.lr", "prune.mode", "prune.tokens"} <= set(read)
    assert read["prune.tokens"].log and read["prune.mode"].choices == ("off", "budget",
                                                                      "threshold")
    assert not set(read) & {"reader.attention", "reader.ablation", "reader.model", "bi_encoder"}
    funnel = {d.option for d in default_space("funnel", reads=False)}
    assert {"K", "N", "H", "hybrid_weight"} <= funnel
    # the LLM at retrieval time: left out for a retrieval measure, searched for EM
    assert "attention_weight" not in funnel
    assert "attention_weight" in {d.option for d in default_space("funnel", reads=True)}
    assert "hyde" not in {d.option for d in default_space("best", reads=False)}
    # clusters of another size or kind are built over the corpus; the later passage size
    # runs only beside a post-ranker that does not read the index's vectors
    assert not funnel & {"cluster_tokens", "cluster_algorithm", "passage_tokens"}


def test_named_dimensions_narrow_ranges_and_list_values_and_bad_ones_are_refused_by_name():
    dims = space(["funnel", "flat"], {"funnel.K": [2, 40], "flat.reranker":
                                      ["bi-encoder", "cross-encoder"], "flat.retriever": None})
    assert [d.describe() for d in dims] == [
        "K: 2 to 40, log scale", "reranker: bi-encoder | cross-encoder", "retriever: dense | bm25"]
    for chosen, message in (
            ({"funnel.Q": None}, "funnel has no option 'Q'"),
            ({"drrag.k": None}, "'drrag' is not one of the paradigms searched"),
            ({"funnel.K": [0, 40]}, "leaves its allowed range, 1 to 200"),
            ({"funnel.K": [40, 2]}, "give \\[low, high\\] with low below high"),
            ({"flat.reranker": None}, "list the values to try"),
            ({"flat.retriever": ["dense", "splade"]}, "'splade' is not a value it takes")):
        with pytest.raises(ConfigError, match=message):
            space(["funnel", "flat"], chosen)
    with pytest.raises(ConfigError, match="Unknown paradigm|no paradigm"):
        space(["nope"])
    assert dimension("best", "hyde").choices == (True, False)


# --- halving, the front, the pick ------------------------------------------------------------


def test_rungs_grow_by_eta_up_to_every_question():
    assert rungs(250) == [28, 84, 250]
    assert rungs(30, eta=3, smallest=4) == [4, 10, 30]
    assert rungs(8) == [8]


def test_a_trial_goes_on_when_few_rank_ahead_of_it_on_measure_and_cost():
    peers = [Point(n, m, c) for n, (m, c) in enumerate(
        [(0.9, 5.0), (0.8, 4.0), (0.5, 1.0), (0.4, 3.0), (0.3, 2.0)])]
    assert [sorted(p.number for p in level) for level in fronts(peers)] == [[0, 1, 2],
                                                                            [3, 4]]
    assert goes_on(Point(9, 0.95, 9.0), peers) == (True, "")  # on the front
    assert goes_on(Point(9, 0.2, 0.5), peers) == (True, "")  # nobody cheaper and better
    stopped, why = goes_on(Point(9, 0.35, 3.5), peers)  # behind two fronts: 5 ahead
    assert not stopped and "5 of 5 trials rank ahead of it" in why and "best 2 go on" in why
    assert goes_on(Point(9, 0.7, 4.5), peers) == (False, (
        "3 of 5 trials rank ahead of it on measure and cost (non-dominated sorting); the "
        "best 2 go on"))
    assert goes_on(Point(9, 0.2, 9.0), peers[:2]) == (True, "")  # too few to compare with
    assert goes_on(Point(9, 0.99, 9.0), peers, ceiling=6.0)[0] is False


def test_the_front_the_pick_within_a_ceiling_and_the_knee():
    points = [Point(0, 0.50, 1.0), Point(1, 0.80, 2.0), Point(2, 0.85, 6.0),
              Point(3, 0.60, 3.0), Point(4, 0.80, 2.5)]
    assert [p.number for p in front(points)] == [0, 1, 2]
    assert pick(points, ceiling=2.2).number == 1
    assert pick(points, ceiling=0.5) is None
    assert knee(front(points)).number == 1  # most of the gain for a third of the cost
    assert pick(points).number == 1


# --- the split and the test -------------------------------------------------------------------


def test_the_split_is_seeded_disjoint_and_whole():
    questions = [Question(id=f"q{i}", text="x") for i in range(10)]
    searched, held = split(questions, 0.3, seed=4)
    assert (len(searched), len(held)) == (7, 3)
    assert {q.id for q in searched} | {q.id for q in held} == {q.id for q in questions}
    assert split(questions, 0.3, seed=4) == (searched, held)
    assert split(questions, 0.3, seed=5) != (searched, held)
    for bad in (0, 0.95, -1):
        with pytest.raises(ConfigError, match="held_out="):
            split(questions, bad)


def test_the_randomization_test_tells_a_real_difference_from_none():
    assert randomization_p([0.5, 0.2, 0.9], [0.5, 0.2, 0.9]) == 1.0
    better = [0.9, 0.8, 0.85, 0.7, 0.95, 0.9, 0.8, 0.88, 0.9, 0.75, 0.8, 0.9]
    worse = [v - 0.3 for v in better]
    assert randomization_p(better, worse) < 0.001
    noisy = [0.5 + (0.1 if i % 2 else -0.1) for i in range(12)]
    assert randomization_p(noisy, [0.5] * 12) > 0.5


def test_verdicts_say_plainly_whether_the_gain_held_after_holm():
    base = {"measure": "AR@4", "n": 50, "diff": 0.1, "test": "McNemar (exact)"}
    held, noise, same = with_verdicts([
        {**base, "ci": [0.04, 0.16], "p": 0.001}, {**base, "ci": [-0.02, 0.2], "p": 0.2},
        {**base, "ci": [0.0, 0.0], "p": 1.0, "pick_is_default": True}])
    assert held["held"] and held["p_holm"] == 0.003
    assert held["verdict"] == ("held: AR@4 +0.100 over the default (95% interval +0.040 to "
                               "+0.160, p=0.003 Holm) on 50 held-out questions")
    assert not noise["held"] and noise["verdict"].startswith("did not hold: AR@4 +0.100")
    assert same["verdict"] == "the search picked the default itself: nothing to gain"


# --- a whole search over a toy paradigm -------------------------------------------------------


@dataclass(frozen=True)
class ReadsConfig:
    k: int = param(2, "k: documents read", low=1, high=8)
    voice: str = param("plain", "how the answer is said", choices=("plain", "loud"))


class ReadsParadigm(EchoParadigm):
    """Echo, whose reader's prompt costs 10 tokens a document (more recall costs more), and
    25 more said loud (which gains nothing: a poor setting)."""

    name = "reads"

    def reader_steps(self, question, candidates):
        said = "Georges Seurat" if any("Seurat" in c.unit.text for c in candidates) else "?"
        yield LLMStep(purpose="answer", model="echo", prompt=question, output=said,
                      prompt_tokens=10 * len(candidates) + 25 * (self.config.voice == "loud"),
                      output_tokens=2, seconds=0.0,
                      answer=said)


READS = ParadigmSpec(name="reads", label="Reads (a toy)", description="a test paradigm",
                     config=ReadsConfig, paradigm=ReadsParadigm)


@pytest.fixture
def reads():
    from engine.paradigms import registry

    registry.register(READS)
    yield READS
    registry.unregister(READS.name)


def _questions(n: int) -> list[Question]:
    asked = (("Who painted A Sunday Afternoon?", ("Georges Seurat", "A Sunday Afternoon")),
             ("Which river flows through Budapest and Vienna?", ("Danube", "Budapest",
                                                                 "Vienna")),
             ("Who developed Pointillism with Seurat?", ("Pointillism", "Paul Signac")))
    return [Question(id=f"q{i}", text=asked[i % 3][0], answers=("x",),
                     supporting_titles=asked[i % 3][1]) for i in range(n)]


def _make():
    from engine.service.store import make_paradigm

    corpus = Corpus("tiny", tuple(Document(id=t, title=t, text=x, sources=("test",))
                                  for t, x in TINY_DOCS))
    return lambda name, config: make_paradigm(name, corpus, config)


def _plan(**changes) -> SearchPlan:
    return SearchPlan(**{"paradigms": ("reads",), "dimensions": tuple(space(["reads"])),
                         "measure": "gold_doc_recall", "cost": "reader_tokens", "trials": 12,
                         "seed": 1, "smallest": 4, **changes})


def test_a_search_stops_poor_trials_early_and_finishes_the_rest(reads):
    stored = []
    search = Search(_plan(), _questions(30), _make(), on_trial=stored.append)
    trials = search.run()
    assert stored == trials and len(trials) == 12 and search.rungs == [4, 10, 30]
    finished = [t for t in trials if t.state == COMPLETE]
    stopped = [t for t in trials if t.state == STOPPED]
    assert finished and stopped
    assert all(len(t.values) == 30 for t in finished)
    assert all(len(t.values) in (4, 10) and t.note.startswith("stopped after")
               for t in stopped)
    # recall and cost both grow with k: the finished trials trade one for the other
    by_k = {t.params["k"]: t for t in finished}
    low, high = min(by_k), max(by_k)
    assert by_k[high].measure() >= by_k[low].measure()
    assert by_k[high].cost("reader_tokens") > by_k[low].cost("reader_tokens")


def test_a_search_given_its_stored_trials_goes_on_and_a_cancelled_trial_is_dropped(reads):
    first = Search(_plan(trials=5), _questions(12), _make()).run()
    answered = []
    resumed = Search(_plan(trials=9), _questions(12), _make(), done=first,
                     progress=answered.append, cancelled=lambda: len(answered) >= 3).run()
    assert resumed[:5] == first
    assert len(answered) == 3 and len(resumed) < 9  # cancelled within its first new run
    assert answered[-1].current.questions == 3
    dropped = answered[-1].current.number
    assert dropped not in [t.number for t in resumed]  # the trial in flight is dropped
    assert all(len(t.values) in (4, 12) for t in resumed)


def test_refused_settings_do_not_count_against_the_budget(reads):
    plan = SearchPlan(paradigms=("flat",), dimensions=tuple(space(
        ["flat"], {"flat.M": [1, 4], "flat.k": [1, 8]})), measure="gold_doc_recall",
        trials=2)
    made = []

    def make(name, config):
        made.append(config)
        raise RuntimeError("not run here")

    trials = Search(plan, _questions(3), make).run()
    refused = [t for t in trials if t.state == REFUSED]
    assert len(trials) - len(refused) == 2 and len(made) == 2
    assert all("is more than M=" in t.note for t in refused)
    assert all(t.config["k"] > t.config["M"] for t in refused)


def test_a_tuning_checks_each_pick_against_the_default_on_held_out_questions(reads):
    plan = _plan(trials=10, ceiling=25.0)
    searched, held = split(_questions(24), 0.5, seed=3)
    found = tune(plan, searched, held, _make())
    winner = found["winner"]
    assert winner is not None and winner["cost"] <= 25.0  # within the ceiling: k <= 2
    check = winner["held_out"]
    assert check["n"] == 12 and check["test"] == "paired randomization"
    assert check["default_config"] == {} and "p_holm" in check
    assert check["verdict"].split(":")[0] in ("held", "did not hold", "worse than the default")
    assert [t["cost"] for t in found["front"]] == sorted(t["cost"] for t in found["front"])
    assert "k" in found["importance"]["reads"]["measure"]


def test_a_pick_without_a_held_out_measure_is_said_and_the_others_get_their_verdicts(
        reads, monkeypatch):
    """Issue 67: best's classifier skipped retrieval for every held-out question, and the
    whole search failed after its trials ("No held-out question has nDCG@10 for both
    runs"). That pick is reported unchecked; the others still get theirs."""
    from dataclasses import replace

    from engine.paradigms import registry
    from engine.tune import tuning

    registry.register(replace(READS, name="best-like"))
    plan = _plan(trials=4)
    searched, held = split(_questions(12), 0.5, seed=3)
    trials = tuning.Search(plan, searched, _make()).run()
    (pick,) = tuning.picks(plan, trials).values()
    real, calls = tuning.compare, []

    def compare(*args):
        calls.append(args)
        if len(calls) == 1:
            raise tuning.ConfigError("No held-out question has nDCG@10 for both runs")
        return real(*args)

    monkeypatch.setattr(tuning, "compare", compare)
    try:
        checked = tuning.held_out_check(plan, {"best-like": pick, "reads": pick}, held,
                                        _make())
    finally:
        registry.unregister("best-like")
    unchecked, verdict = ({c["paradigm"]: c for c in checked}[p]
                          for p in ("best-like", "reads"))
    assert unchecked["verdict"].startswith("not checked: No held-out question has nDCG@10")
    assert not unchecked["measured"] and not unchecked["held"]
    assert verdict["verdict"].split(":")[0] in ("held", "did not hold",
                                                "worse than the default",
                                                "the search picked the default itself")


def test_a_search_whose_questions_lack_the_measure_picks_nothing_and_says_why(reads):
    """Issue 67, in the browser: a question set whose search questions had no judgments
    yet gave trials without nDCG@10, one of them the 'winner' with no measure, and the
    Tune view failed on every poll. No trial without the measure is a pick; the report
    says why and what to do, and a stored winner without a measure still draws."""
    from app.views.tuning import progress_html
    from engine.service.tuning import TuneStatus
    from engine.store.tuning import QuestionSplit
    from engine.tune import tuning
    from engine.tune.search import CurrentTrial, SearchProgress

    unjudged = [Question(id=f"q{i}", text=q.text, answers=("x",))
                for i, q in enumerate(_questions(8))]
    searched, held = split(unjudged, 0.5, seed=3)
    plan = _plan(trials=3)
    result = tuning.tune(plan, searched, held, _make())
    assert sum(result["trials"].values()) == 3 and result["winner"] is None
    assert result["note"].startswith("None of the search questions has gold_doc_recall")
    status = TuneStatus(id=1, name="", dataset="mine (support)", corpus="mine",
                        state="done", questions=QuestionSplit(search=4, held_out=4),
                        plan=plan, result=result)
    shown = progress_html(status)
    assert "None of the search questions has gold_doc_recall" in shown and "fe-error" in shown
    stored = {**result, "winner": {"label": "reads k=2", "measure": None, "cost": 20.0,
                                   "held_out": None}}
    assert "(gold_doc_recall -, 20 tokens" in progress_html(replace(status, result=stored))
    running = replace(status, state="running", result=None, search=SearchProgress(
        trials=2, of=4, refused=0, current=CurrentTrial(2, "reads k=2", 3), elapsed=60.0,
        left=120))
    assert "Now: trial 3, reads k=2, 3 questions. About 2 min left." in progress_html(running)


def test_each_pick_is_costed_against_its_own_paradigm_s_default(reads):
    """Issue 67: the held-out table showed one default cost for two paradigms. Two
    paradigms whose defaults read 2 and 5 documents cost 45 and 75 reader tokens: each
    pick's row carries its own paradigm's default cost, and the view shows both."""
    from dataclasses import field, make_dataclass, replace

    from app.views.tuning import held_out_rows
    from engine.paradigms import registry
    from engine.service.tuning import TuneStatus
    from engine.store.tuning import QuestionSplit
    from engine.tune import tuning

    deeper = make_dataclass("DeeperConfig", [("k", int, field(default=5)),
                                             ("voice", str, field(default="plain"))],
                            bases=(ReadsConfig,), frozen=True)
    registry.register(replace(READS, name="deeper", config=deeper))
    plan = _plan(trials=4, paradigms=("reads", "deeper"))
    searched, held = split(_questions(12), 0.5, seed=3)
    try:
        trials = tuning.Search(plan, searched, _make()).run()
        chosen = tuning.picks(plan, trials)
        checked = {c["paradigm"]: c for c in tuning.held_out_check(
            plan, {p: chosen["reads"] for p in ("reads", "deeper")}, held, _make())}
    finally:
        registry.unregister("deeper")
    assert checked["reads"]["cost"]["default"] != checked["deeper"]["cost"]["default"]
    rows = held_out_rows(TuneStatus(
        id=1, name="", dataset="", corpus="", state="done", questions=QuestionSplit(0, 0),
        plan=plan, result={"held_out": list(checked.values())}))
    assert len({row[9].split(" / ")[1] for row in rows}) == 2


# --- stored, resumed, saved as a preset; the command line ------------------------------------


def test_a_stored_search_resumes_from_its_trials_and_saves_its_winner_as_a_preset(reads,
                                                                                   tmp_path):
    from engine.service.tune_jobs import resume_tune, start_tune
    from engine.store.presets import PresetStore
    from engine.store.sessions import SessionStore
    from engine.store.tuning import TuneStore

    store = SessionStore(tmp_path / "s.duckdb")
    corpus = Corpus("tiny", tuple(Document(id=t, title=t, text=x, sources=("test",))
                                  for t, x in TINY_DOCS))
    questions = _questions(24)

    def cancel_after_three(status: dict) -> None:
        if status["search"]["trials"] >= 3:
            job.cancel()

    job = start_tune(store, _plan(trials=6), questions, corpus, "toy questions",
                     on_status=cancel_after_three)
    job.run()
    tunes = TuneStore(store)
    stored = tunes.get(job.id)
    assert stored.state == "cancelled" and stored.trials == 3 and stored.result["held_out"] == []
    assert len(stored.search_ids) == len(stored.held_out_ids) == 12
    assert PresetStore(store).find(f"tune-{job.id}") is None  # nothing saved when cancelled
    first = tunes.trials(job.id)
    with pytest.raises(ConfigError, match="resume it over that corpus"):
        resume_tune(store, job.id, questions, Corpus("other", corpus.documents))
    with pytest.raises(ConfigError, match="lacks 12 of its questions"):
        resume_tune(store, job.id, [q for q in questions if q.id in stored.search_ids],
                    corpus)
    again = resume_tune(store, job.id, list(reversed(questions)), corpus)
    assert [q.id for q in again.search_part] == stored.search_ids  # the same split
    again.run()
    done = tunes.get(job.id)
    assert done.state == "done" and done.trials == 6 and tunes.trials(job.id)[:3] == first
    preset = PresetStore(store).get(f"tune-{job.id}")
    winner = done.result["winner"]
    assert (preset.paradigm, preset.config, preset.source) == ("reads", winner["config"],
                                                               f"tune {job.id}")
    assert winner["held_out"]["verdict"] in preset.notes
    with pytest.raises(ConfigError, match="only one that ended early"):
        resume_tune(store, job.id, questions, corpus)
    with pytest.raises(ConfigError, match=f"A preset named 'tune-{job.id}' exists already"):
        start_tune(store, _plan(), questions, corpus, "toy", preset=f"tune-{job.id}")
    store.close()


def test_the_command_line_tunes_a_collection_and_prints_the_report_as_json(tmp_path, echo,
                                                                           capsys):
    import json

    from engine.cli import main as cli_main
    from tests.test_collection_eval import tiny_beir

    db = str(tmp_path / "s.duckdb")
    assert cli_main.main(["tune", "--dataset", str(tiny_beir(tmp_path)), "--paradigm", "echo",
                          "--trials", "4", "--db", db, "--preset", "tiny-best",
                          "--json"]) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["measure"] == "nDCG@10" and report["cost"] == "seconds"
    assert report["questions"] == {"search": 1, "held_out": 1}
    assert [d["name"] for d in report["space"]] == ["echo.k", "echo.voice"]
    assert sum(report["trials"].values()) >= 4 and report["front"]
    assert report["winner"]["held_out"]["n"] == 1 and report["preset"] == "tiny-best"
    assert cli_main.main(["presets", "--db", db, "list"]) == 0
    assert "tiny-best" in capsys.readouterr().out
    for argv, said in ((["--measure", "EM"], "judged, not answered: EM needs answers"),
                       (["--space", "[1]"], "--space must be a JSON object"),
                       (["--paradigm", "nope"], "nope"),
                       (["--trials", "0"], "trials=0 is out of range")):
        assert cli_main.main(["tune", "--dataset", "tinybeir (test)", "--db", db,
                              *argv]) == 2
        assert said in capsys.readouterr().err


def test_the_service_runs_a_search_in_the_background_and_refuses_bad_input(explorer,
                                                                           tmp_path,
                                                                           monkeypatch):
    import threading
    import time

    from engine.results import plain
    from engine.service.tune_jobs import TuneJob
    from tests.fakes import qa_file

    release, work = threading.Event(), TuneJob.work  # the search waits until told to go
    monkeypatch.setattr(TuneJob, "work", lambda job: (release.wait(60), work(job))[1])

    qa = qa_file(tmp_path / "qa.jsonl", n=6)
    tuning = explorer.tuning
    with pytest.raises(ConfigError, match="Unknown paradigm|no paradigm"):
        tuning.tune(qa, ["nope"])
    with pytest.raises(ConfigError, match="The cost ceiling -1 must be above 0"):
        tuning.tune(qa, ["echo"], ceiling=-1)
    assert [d.name for d in tuning.search_space(["echo"])] == ["echo.k", "echo.voice"]
    tune_id = tuning.tune(qa, ["echo"], trials=3, name="mine")
    with pytest.raises(ConfigError, match=f"Search {tune_id} is still running"):
        tuning.tune(qa, ["echo"], trials=3)
    release.set()
    deadline = time.monotonic() + 60
    while tuning.tune_status(tune_id).state == "running" and time.monotonic() < deadline:
        time.sleep(0.2)
    status = tuning.tune_status(tune_id)
    assert status.state == "done" and status.plan.measure == "AR@4"
    assert (status.questions.search, status.questions.held_out) == (3, 3)
    assert status.front and status.result["winner"]["held_out"]["n"] == 3
    stored = tuning.store.trials(tune_id)  # the API's JSON: each trial as a report shows it
    assert plain(status)["trials"] == [t.to_dict(status.plan) for t in stored]
    assert plain(status)["plan"] == status.plan.to_dict() and len(stored) == 3
    assert tuning.tunes()[0].name == "mine" and tuning.tunes()[0].trials == "3 of 3"
    assert f"tune-{tune_id}" in [p.name for p in explorer.presets.list_presets()]
    with pytest.raises(ConfigError, match=f"Search {tune_id} is not running here"):
        tuning.cancel_tune(tune_id)


def test_a_setting_far_over_the_ceiling_stops_after_a_few_questions(reads):
    plan = _plan(trials=6, ceiling=20.0, smallest=12, base={"reads": {"voice": "loud"}},
                 dimensions=tuple(space(["reads"], {"reads.k": [3, 8]})))  # 55+ tokens
    trials = Search(plan, _questions(30), _make()).run()
    assert all(t.state == STOPPED and len(t.values) == 5 for t in trials)
    assert all("over twice the ceiling" in t.note for t in trials
               if not t.note.startswith("the setting of trial"))
