"""Every prompt the readers send, in one place: answer templates and the FiD block layout.

Answer templates (chosen by `ReaderConfig.prompt`), measured on the *training* questions
with their gold paragraphs (bench/reader_prompts.py; figures in docs/benchmarks/reader.md,
"The reader's prompt"):
- `fewshot` (default): a plain completion prompt with worked examples, then the passages and
  the question; generation stops at the first line break. A small instruct model copies the
  examples' short answers instead of chatting.
- `plain`: the same without the worked examples.
- `chat`: the model's chat template, a system instruction and the passages with the question
  as the user turn (what an instruct model is tuned for, and what a remote chat endpoint
  takes).
- `chat-fewshot`: the chat template with the worked examples as earlier turns.

The FiD block layout follows the model family: chat-formatted blocks for models with a
ChatML template (SmolLM2), plain "Context/Question/Answer" blocks for any other model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.readers.generator import Message, Prompt

SYSTEM = "Answer the question from the context in a few words."

# Worked examples: made up for the prompt, from no dataset (so nothing leaks into
# evaluation): a bridge question, a comparison and a yes/no question, as in HotpotQA, and a
# "who wrote" question whose passage names another work last. Without that fourth example
# the small reader answered "Who wrote War and Peace?" with "Anna Karenina", the last title
# in the article; with it, on the 200 training questions, EM/F1 0.205/0.279 vs 0.190/0.266
# over gold paragraphs and 0.100/0.159 vs 0.100/0.162 over the top-4 ranked ones (equal
# within noise, ~80 more prompt tokens; docs/benchmarks/reader.md, "The reader's prompt").
EXAMPLES: tuple[tuple[str, str, str], ...] = (
    ("Marta Velin: Marta Velin (1871-1932) was a painter known for her coastal landscapes. "
     "She studied at the Harlow Institute of Art.\n"
     "Harlow Institute of Art: The Harlow Institute of Art is an art school in the city of "
     "Brenmoor, founded in 1802.",
     "In which city is the art school where Marta Velin studied?", "Brenmoor"),
    ("Ostra River: The Ostra River is a 310 km long river that flows through the Kellan "
     "Valley.\n"
     "Vell River: The Vell River is a 145 km long river in the north of Dalmark.",
     "Which river is longer, the Ostra River or the Vell River?", "Ostra River"),
    ("Pelle Arnsen: Pelle Arnsen (born 1950) is a Norwegian composer of film music.\n"
     "Ida Brook: Ida Brook (born 1962) is a Canadian novelist and poet.",
     "Are Pelle Arnsen and Ida Brook both composers?", "no"),
    ("Harbour Lights: Harbour Lights is a 1931 novel by the Scottish author Elspeth Carrow. "
     "Set in a fishing town, it was followed by her second novel, The Grey Shore.\n"
     "Kellan Valley: The Kellan Valley is a valley in the north of Dalmark.",
     "Who wrote Harbour Lights?", "Elspeth Carrow"),
)


@dataclass(frozen=True)
class BuiltPrompt:
    """A prompt and, for plain-text prompts, the character span of every passage in it;
    `prefix` is its fixed opening, the same for every question (text, or the leading chat
    messages), which an in-process generator reads once (engine/readers/prefix_cache.py)."""

    prompt: Prompt
    spans: tuple[tuple[int, int], ...]
    stop: tuple[str, ...]
    prefix: Prompt = ""


def _context(passages: Sequence[tuple[str, str]], offset: int) -> tuple[str, list]:
    """Passages as "Title: text" lines, and each text's span counted from `offset`."""
    parts, spans, at = [], [], offset
    for title, text in passages:
        head = f"{title}: "
        spans.append((at + len(head), at + len(head) + len(text)))
        parts.append(head + text)
        at += len(head) + len(text) + 1  # the joining newline
    return "\n".join(parts), spans


def _completion(question: str, passages: Sequence[tuple[str, str]],
                examples: Sequence[tuple[str, str, str]], answer: str = "Answer:") -> BuiltPrompt:
    shots = "".join(f"Context:\n{c}\n\nQuestion: {q}\n{answer} {a}\n\n"
                    for c, q, a in examples)
    head = shots + "Context:\n"
    context, spans = _context(passages, len(head))
    return BuiltPrompt(f"{head}{context}\n\nQuestion: {question}\n{answer}", tuple(spans),
                       ("\n",), prefix=head)


def _chat(question: str, passages: Sequence[tuple[str, str]],
          examples: Sequence[tuple[str, str, str]]) -> BuiltPrompt:
    messages = [Message("system", SYSTEM)]
    for c, q, a in examples:
        messages += [Message("user", f"Context: {c}\nQuestion: {q}"), Message("assistant", a)]
    context, _ = _context(passages, 0)
    fixed = tuple(messages)
    messages.append(Message("user", f"Context: {context}\nQuestion: {question}"))
    return BuiltPrompt(tuple(messages), (), ("\n",), prefix=fixed)


TEMPLATES = {
    "fewshot": lambda q, p: _completion(q, p, EXAMPLES),
    "plain": lambda q, p: _completion(q, p, ()),
    "chat": lambda q, p: _chat(q, p, ()),
    "chat-fewshot": lambda q, p: _chat(q, p, EXAMPLES),
}


def answer_prompt(template: str, question: str,
                  passages: Sequence[tuple[str, str]]) -> BuiltPrompt:
    """The answer prompt of `template` (or `LONG_ANSWER`) over (title, text) passages."""
    if template == LONG_ANSWER:
        return _completion(question, passages, _long_examples(), answer="Long answer:")
    return TEMPLATES[template](question, passages)


# --- LongRAG's two turns --------------------------------------------------------------------
# LongRAG's long reader (Jiang et al.; their utils/gpt_inference.py) first answers over the
# whole context in a sentence, then a second call, which sees only the question and that long
# answer, extracts the short answer with worked examples. Here both turns are completion
# prompts over the same made-up examples as the short-answer templates.

LONG_ANSWER = "long-answer"  # answer_prompt's template of the first turn
LONG_ANSWERS = (
    "Marta Velin studied at the Harlow Institute of Art, an art school in the city of "
    "Brenmoor.",
    "The Ostra River is 310 km long and the Vell River 145 km, so the Ostra River is longer.",
    "No: Pelle Arnsen is a composer, but Ida Brook is a novelist and poet.",
    "Harbour Lights was written by the Scottish author Elspeth Carrow.",
)


def _long_examples() -> list[tuple[str, str, str]]:
    return [(c, q, long) for (c, q, _), long in zip(EXAMPLES, LONG_ANSWERS, strict=True)]


def extract_prompt(question: str, long_answer: str) -> BuiltPrompt:
    """The second turn: the short answer taken from the first turn's long answer."""
    shots = "".join(f"Question: {q}\nLong answer: {long}\nShort answer: {short}\n\n"
                    for (_, q, short), long in zip(EXAMPLES, LONG_ANSWERS, strict=True))
    return BuiltPrompt(f"{shots}Question: {question}\nLong answer: {long_answer.strip()}\n"
                       "Short answer:", (), ("\n",), prefix=shots)


# --- FiD blocks ---------------------------------------------------------------------------


@dataclass(frozen=True)
class FiDLayout:
    """One FiD block is head(title) + passage + tail(question); `end` follows the fused
    blocks and prompts the answer."""

    head: str
    tail: str
    end: str


CHATML = FiDLayout(
    head=f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\nContext: {{title}}: ",
    tail="\nQuestion: {question}",
    end="<|im_end|>\n<|im_start|>assistant\n",
)
PLAIN = FiDLayout(head="Context: {title}: ", tail="\nQuestion: {question}", end="\nAnswer:")


def fid_layout(tokenizer) -> FiDLayout:
    """ChatML blocks for tokenizers that know `<|im_start|>`, plain blocks otherwise."""
    return CHATML if "<|im_start|>" in tokenizer.get_vocab() else PLAIN


# --- HyDE ---------------------------------------------------------------------------------
# HyDE (Gao et al.) asks the generator for a passage that would answer the question and
# searches with it; the best-practices pipeline concatenates it with the question. The
# worked examples are the short-answer templates' made-up passages.

HYDE_HEAD = "Write a short encyclopedia passage that answers the question.\n\n"
HYDE_EXAMPLES = (
    ("In which city is the art school where Marta Velin studied?",
     "Marta Velin (1871-1932) was a painter who studied at the Harlow Institute of Art, an "
     "art school in the city of Brenmoor."),
    ("Who wrote Harbour Lights?",
     "Harbour Lights is a 1931 novel by the Scottish author Elspeth Carrow, set in a fishing "
     "town."),
)


def hyde_prompt(question: str) -> BuiltPrompt:
    """A completion prompt for a one-paragraph pseudo-document; it stops at a line break."""
    shots = "".join(f"Question: {q}\nPassage: {p}\n\n" for q, p in HYDE_EXAMPLES)
    return BuiltPrompt(f"{HYDE_HEAD}{shots}Question: {question}\nPassage:", (), ("\n",),
                       prefix=HYDE_HEAD + shots)
