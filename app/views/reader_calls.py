"""The reader's calls of a run as Explore lists them under its stages: every LLM call
(what for, tokens, seconds, what it said, the prompt), and the leave-one-out attribution of
an attributed run, row for row with the heatmap's passages."""

from __future__ import annotations

from app.views.heatmap import row_labels
from app.views.trace import esc, shown_answer
from engine.readers.ablation import reading_step
from engine.trace import RunTrace


def llm_steps_table(trace: RunTrace) -> str:
    """Every LLM call of a run: what for, tokens in and out, seconds, what it said, and the
    prompt as sent (collapsed)."""
    if not trace.llm_steps:
        return ""
    rows = []
    for n, step in enumerate(trace.llm_steps, start=1):
        said = esc(step.output.strip() or "(nothing)")
        if step.answer and (step.answer != step.output.strip() or step.answer_cut):
            said += (f"<br><small>short answer: "
                     f"{shown_answer(step.answer, step.answer_cut)}</small>")
        cached = (f"<br><small>{step.cached_tokens:,} cached</small>"
                  if step.cached_tokens else "")
        rows.append(f"<tr><td>{n}</td><td>{esc(step.purpose)}</td><td>{esc(step.model)}</td>"
                    f"<td>{step.prompt_tokens:,}{cached}</td><td>{step.output_tokens:,}</td>"
                    f"<td>{step.seconds:.2f}</td><td>{said}<details><summary>prompt"
                    f"</summary><pre class='fe-prompt'>{esc(step.prompt)}</pre></details>"
                    "</td></tr>")
    return ("<div class='fe-stage'><b>LLM calls</b></div><table class='fe-table fe-llm'>"
            "<thead><tr><th>#</th><th>purpose</th><th>model</th><th>tokens in</th>"
            "<th>tokens out</th><th>s</th><th>said</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def ablation_table(trace: RunTrace) -> str:
    """The reader's answer with each passage read left out (leave-one-out), in the order
    the prompt held them: the answer's log-probability lost, and what it says then."""
    step = reading_step(trace)
    if step is None:
        return ""
    ablation = step.ablation
    labels = row_labels(trace, ablation.passages)  # as the heatmap's rows are labelled
    rows = []
    for label, p, lost, said, changed in zip(
            labels, ablation.passages, ablation.effects, ablation.answers_without,
            ablation.changed, strict=True):
        mark = " class='fe-changed'" if changed else ""
        rows.append(f"<tr{mark}><td>{esc(label)}<br><small>{esc(p)}</small></td>"
                    f"<td>{lost:+.2f}</td><td>{esc(said or '(nothing)')}"
                    f"{' (another answer)' if changed else ''}</td></tr>")
    return (f"<div class='fe-stage'><b>Leave-one-out attribution</b> of "
            f"“{esc(ablation.answer)}” ({step.purpose} step): log-probability "
            f"{ablation.logprob:.2f} with every passage; {ablation.tokens_read:,} tokens read "
            f"again in {ablation.seconds:.2f} s (the answer took {step.seconds:.2f} s)</div>"
            "<table class='fe-table fe-ablation'><thead><tr><th>passage left out (in the "
            "prompt's order; # its rank, as on the heatmap)</th><th>log-prob lost</th>"
            "<th>the reader then says</th></tr>"
            f"</thead><tbody>{''.join(rows)}</tbody></table>")
