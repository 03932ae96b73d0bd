"""The labelled set of the query classifier: does a request need retrieval?

Built here, deterministically, and never stored in the repository (its questions come from
the shared data, which stays outside it):
- label 1, "needs knowledge": the training questions of HotpotQA and MuSiQue train100 and
  the SQuAD v2 sample's questions (facts the model must look up);
- label 0, "needs no retrieval": requests that carry everything they need, made from the
  templates below in seven kinds (rewriting, arithmetic, chit-chat, translation, working
  on a given text, creative writing, ordering), as in the best-practices paper's split of
  tasks that need external knowledge from those that do not. Their slots take real
  sentences of the default corpus, so names and facts appear in requests that still need
  no retrieval, and the classifier cannot learn "a name means knowledge".

Held apart for the reported accuracy: every fifth template of each kind (phrasings never
seen in training) and a fifth of the knowledge questions of each source (by a seeded draw).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from engine.models.query_classifier import KNOWLEDGE_FILES
from engine.paths import shared_data_dir
from engine.text import split_sentences

SQUAD_QUESTIONS = 200  # of the 626 in the sample: the three sources stay near balance

# kind -> templates; {s} a corpus sentence, {a} {b} numbers, {w} words, {lang} a language,
# {topic} a topic, {phrase} a short everyday phrase
TEMPLATES: dict[str, tuple[str, ...]] = {
    "rewriting": (
        "Rewrite this sentence in the passive voice: {s}",
        "Paraphrase the following sentence: {s}",
        "Make this sentence sound more formal: {s}",
        "Shorten this sentence to at most ten words: {s}",
        "Fix any grammar mistakes in this sentence: {s}",
        "Rewrite this so a child could understand it: {s}",
        "Turn this sentence into a question: {s}",
        "Change this sentence to the past tense: {s}",
        "Make this sentence more concise: {s}",
        "Rephrase this in plain English: {s}",
    ),
    "arithmetic": (
        "What is {a} plus {b}?",
        "Compute {a} times {b}.",
        "What is {a} minus {b}?",
        "Divide {a} by {b} and round to two decimals.",
        "What is {b} percent of {a}?",
        "If I have {a} apples and give away {b}, how many are left?",
        "Convert {a} kilometres to metres.",
        "What is the square of {b}?",
        "Add up {a}, {b} and 17.",
        "Is {a} an even number?",
    ),
    "chit-chat": (
        "Hi there, how are you today?",
        "Thanks a lot, that was really helpful!",
        "Good morning! Ready to help me out?",
        "Can you tell me a joke about {topic}?",
        "I'm feeling a bit bored, any ideas to cheer me up?",
        "Hello! What should I call you?",
        "That's great, thank you so much.",
        "Do you like {topic}?",
        "Let's just chat for a while.",
        "Good night, talk to you tomorrow.",
    ),
    "translation": (
        "Translate '{phrase}' into {lang}.",
        "How do you say '{phrase}' in {lang}?",
        "Please translate this sentence into {lang}: {s}",
        "What is '{phrase}' in {lang}?",
        "Give me the {lang} for '{phrase}'.",
        "Translate to {lang}: {phrase}",
        "Can you put '{phrase}' into {lang} for me?",
        "Render this in {lang}: {s}",
        "I need '{phrase}' translated into {lang}.",
        "Say '{phrase}' in {lang}, please.",
    ),
    "given text": (
        "Summarise the following text in one sentence: {s}",
        "List every name mentioned in this sentence: {s}",
        "Count the words in this sentence: {s}",
        "What is the main verb of this sentence? {s}",
        "Give this sentence a short title: {s}",
        "Is this sentence written in the past or present tense? {s}",
        "Extract the numbers from this text: {s}",
        "Classify the tone of this sentence as positive, negative or neutral: {s}",
        "Split this sentence into two shorter ones: {s}",
        "Underline the subject of this sentence: {s}",
    ),
    "creative": (
        "Write a short poem about {topic}.",
        "Write a haiku about {topic}.",
        "Tell me a bedtime story about {topic}.",
        "Write a limerick about {topic}.",
        "Invent a slogan for a shop that sells {topic}.",
        "Write two lines of song lyrics about {topic}.",
        "Describe {topic} in three adjectives.",
        "Give me a catchy name for a podcast about {topic}.",
        "Write a tweet announcing a party about {topic}.",
        "Compose a short riddle about {topic}.",
    ),
    "ordering": (
        "Sort these numbers from smallest to largest: {a}, {b}, 42, 7.",
        "Put these words in alphabetical order: {w}.",
        "Reverse the order of these words: {w}.",
        "Which of these numbers is the largest: {a}, {b} or 99?",
        "Arrange these words by length: {w}.",
        "Remove the duplicates from this list: {w}, {w}.",
        "Which word comes first in the alphabet: {w}?",
        "Sort these words from Z to A: {w}.",
        "Count how many words are in this list: {w}.",
        "Which number is smaller, {a} or {b}?",
    ),
}
PER_TEMPLATE = 6  # examples made from each template
LANGUAGES = ("French", "German", "Spanish", "Italian", "Portuguese", "Dutch", "Swedish")
TOPICS = ("the sea", "autumn leaves", "a lost cat", "coffee", "trains", "the moon",
          "homework", "rainy days", "birthday cake", "robots", "gardening", "football")
PHRASES = ("good morning", "where is the station", "thank you very much", "I am hungry",
           "see you tomorrow", "how much does it cost", "happy birthday", "I love books")
WORDS = ("apple", "river", "banana", "window", "zebra", "candle", "mountain", "pencil",
         "orange", "garden", "ticket", "violin")


@dataclass(frozen=True)
class QueryExample:
    """A request, whether it needs retrieval (1) or not (0), its kind and split."""

    text: str
    label: int
    kind: str
    held_out: bool


def knowledge_questions(root: Path | None = None) -> list[tuple[str, str]]:
    """(source, question) of every knowledge question the set uses."""
    root = root or shared_data_dir()
    out = []
    for name in KNOWLEDGE_FILES[:2]:
        for item in json.loads((root / name).read_text(encoding="utf-8")):
            out.append((name.split("/")[0], item["question"].strip()))
    squad = json.loads((root / KNOWLEDGE_FILES[2]).read_text(encoding="utf-8"))
    questions = [qa["question"].strip() for article in squad["data"]
                 for paragraph in article["paragraphs"] for qa in paragraph["qas"]]
    out += [("squad", q) for q in questions[:SQUAD_QUESTIONS]]
    return out


def corpus_sentences(texts: list[str], limit: int = 5_000) -> list[str]:
    """Sentences of 6 to 40 words from `texts` (the slots' real sentences)."""
    out = []
    for text in texts:
        for a, b in split_sentences(text):
            sentence = text[a:b].strip()
            if 6 <= len(sentence.split()) <= 40:
                out.append(sentence)
                if len(out) >= limit:
                    return out
    return out


def build_examples(sentences: list[str], questions: list[tuple[str, str]],
                   seed: int = 13) -> list[QueryExample]:
    """The whole labelled set, deterministic for a seed."""
    rng = random.Random(seed)
    out, seen = [], set()
    for kind, templates in TEMPLATES.items():
        for t, template in enumerate(templates):
            for _ in range(PER_TEMPLATE):
                text = template.format(
                    s=rng.choice(sentences), a=rng.randint(2, 999), b=rng.randint(2, 99),
                    w=", ".join(rng.sample(WORDS, 4)), lang=rng.choice(LANGUAGES),
                    topic=rng.choice(TOPICS), phrase=rng.choice(PHRASES))
                if text not in seen:  # a template without slots gives one example
                    seen.add(text)
                    out.append(QueryExample(text, 0, kind, held_out=t % 5 == 4))
    for source in dict.fromkeys(s for s, _ in questions):
        mine = [q for s, q in questions if s == source]
        held = set(rng.sample(range(len(mine)), len(mine) // 5))
        out += [QueryExample(q, 1, f"knowledge ({source})", i in held)
                for i, q in enumerate(mine)]
    return out
