"""Tuning: a search over paradigms' options under a cost, and a winner checked on held-out
questions.

- space (engine.tune.space): the options searched, from each paradigm's declared options;
- halving (engine.tune.halving): question rungs, who goes on, the front, the winner;
- search (engine.tune.search): Optuna's TPE over the space, trials stopped early by
  successive halving, each trial handed to whoever stores it;
- held_out (engine.tune.held_out): the seeded split, and the winner against the default on
  questions the search never saw;
- importance (engine.tune.importance): which option mattered (Optuna's fANOVA).
"""
