"""engine.eval.runner.answer_all with questions in flight at once (a fake paradigm)."""

from __future__ import annotations

import threading
import time

from engine.documents import Question
from engine.eval.runner import answer_all


class SlowParadigm:
    """Answers a question with its id after a pause, counting how many run at once."""

    def __init__(self, name: str) -> None:
        self.name, self.running, self.most = name, 0, 0
        self._lock = threading.Lock()

    def run(self, question: Question) -> str:
        with self._lock:
            self.running += 1
            self.most = max(self.most, self.running)
        time.sleep(0.02 if int(question.id) % 2 else 0.05)  # later questions may end first
        with self._lock:
            self.running -= 1
        return f"{self.name}:{question.id}"


QUESTIONS = [Question(id=str(i), text=f"question {i}?", answers=("x",)) for i in range(9)]


def test_questions_in_flight_together_come_back_in_question_order():
    a, b = SlowParadigm("a"), SlowParadigm("b")
    traces = list(answer_all([a, b], QUESTIONS, concurrency=4))
    assert traces == [[f"a:{q.id}", f"b:{q.id}"] for q in QUESTIONS]
    assert 1 < a.most <= 4  # several questions at once, never more than asked
    one = SlowParadigm("a")
    assert list(answer_all([one], QUESTIONS[:3])) == [["a:0"], ["a:1"], ["a:2"]]
    assert one.most == 1


def test_a_cancelled_evaluation_submits_no_more_questions():
    paradigm, answered = SlowParadigm("a"), []
    for traces in answer_all([paradigm], QUESTIONS, concurrency=3,
                             cancelled=lambda: len(answered) >= 2):
        answered.append(traces)
    # those already in flight when it was cancelled still come back, nothing after them
    assert 2 <= len(answered) <= 2 + 3 and len(answered) < len(QUESTIONS)
    assert answered == [[f"a:{q.id}"] for q in QUESTIONS[:len(answered)]]
