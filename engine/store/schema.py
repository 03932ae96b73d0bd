"""The sessions database's schema: every migration, in order.

`SessionStore` applies each once, in a transaction, and records it in `schema_migrations`.
Saved runs (1-4), classifier labels, stored evaluations (5-7), relevance judgments with
their pools (8, 9), whose work each is and the audit log (10), named presets (11; their
corpus, 13), tuning searches with their trials (12) and nuggets with the answers'
assignments to them (14) share the one DuckDB file.
"""

from __future__ import annotations

# (version, description, statements). Append only: a released migration never changes.
MIGRATIONS: tuple[tuple[int, str, tuple[str, ...]], ...] = (
    (1, "runs table", (
        "CREATE SEQUENCE run_ids START 1",
        """CREATE TABLE runs (
               id BIGINT PRIMARY KEY DEFAULT nextval('run_ids'),
               name VARCHAR NOT NULL,
               notes VARCHAR NOT NULL DEFAULT '',
               question VARCHAR NOT NULL,
               paradigm VARCHAR NOT NULL,
               created TIMESTAMPTZ NOT NULL DEFAULT current_timestamp,
               trace JSON NOT NULL)""",
    )),
    (2, "headline metrics and reader budget beside the trace, for listing and comparing", (
        "ALTER TABLE runs ADD COLUMN metrics JSON",
        "ALTER TABLE runs ADD COLUMN reader_tokens INTEGER",
        "ALTER TABLE runs ADD COLUMN seconds DOUBLE",
    )),
    (3, "the corpus a run searched (name and fingerprint)", (
        "ALTER TABLE runs ADD COLUMN corpus VARCHAR",
        "ALTER TABLE runs ADD COLUMN corpus_fingerprint VARCHAR",
    )),
    (4, "selection-classifier labels (engine/store/labels.py)", (
        "CREATE SEQUENCE label_ids START 1",
        """CREATE TABLE labels (
               id BIGINT PRIMARY KEY DEFAULT nextval('label_ids'),
               question VARCHAR NOT NULL,
               question_id VARCHAR NOT NULL DEFAULT '',
               d1_id VARCHAR NOT NULL,
               d1_title VARCHAR NOT NULL,
               d1_text VARCHAR NOT NULL,
               d2_id VARCHAR NOT NULL,
               d2_title VARCHAR NOT NULL,
               d2_text VARCHAR NOT NULL,
               texts_fingerprint VARCHAR NOT NULL,
               label INTEGER NOT NULL CHECK (label IN (0, 1)),
               source VARCHAR NOT NULL,
               annotator VARCHAR NOT NULL DEFAULT '',
               created TIMESTAMPTZ NOT NULL DEFAULT current_timestamp,
               UNIQUE (question, d1_id, d2_id))""",
    )),
    (5, "evaluations: a dataset through paradigms, every run stored (engine/store/"
        "evaluations.py)", (
        "CREATE SEQUENCE evaluation_ids START 1",
        """CREATE TABLE evaluations (
               id BIGINT PRIMARY KEY DEFAULT nextval('evaluation_ids'),
               name VARCHAR NOT NULL,
               dataset VARCHAR NOT NULL,
               questions INTEGER NOT NULL,
               paradigms JSON NOT NULL,
               configs JSON NOT NULL,
               corpus VARCHAR NOT NULL,
               corpus_fingerprint VARCHAR NOT NULL,
               code_version VARCHAR NOT NULL,
               state VARCHAR NOT NULL,
               summary JSON,
               error VARCHAR NOT NULL DEFAULT '',
               created TIMESTAMPTZ NOT NULL DEFAULT current_timestamp,
               finished TIMESTAMPTZ)""",
        """CREATE TABLE evaluation_runs (
               evaluation_id BIGINT NOT NULL,
               position INTEGER NOT NULL,
               paradigm VARCHAR NOT NULL,
               question_id VARCHAR NOT NULL,
               row JSON NOT NULL,
               trace JSON NOT NULL,
               PRIMARY KEY (evaluation_id, position, paradigm))""",
    )),
    (6, "the evaluation a ceiling evaluation's runs are paired against (engine/eval/"
        "ceilings.py)", (
        "ALTER TABLE evaluations ADD COLUMN baseline BIGINT",
    )),
    (7, "what an evaluation planned to run (its questions with their positions, sweep kinds, "
        "ceiling cuts), so an interrupted one resumes from the questions it lacks (engine/"
        "service/evaluation_jobs.py)", (
        "ALTER TABLE evaluations ADD COLUMN plan JSON",
    )),
    (8, "relevance judgments of a collection's questions, and the pools they are judged from "
        "(engine/store/judgments.py)", (
        "CREATE SEQUENCE pool_ids START 1",
        """CREATE TABLE pools (
               id BIGINT PRIMARY KEY DEFAULT nextval('pool_ids'),
               name VARCHAR NOT NULL,
               collection VARCHAR NOT NULL,
               corpus VARCHAR NOT NULL,
               corpus_fingerprint VARCHAR NOT NULL,
               depth INTEGER NOT NULL,
               systems JSON NOT NULL,
               created TIMESTAMPTZ NOT NULL DEFAULT current_timestamp)""",
        """CREATE TABLE pool_units (
               pool_id BIGINT NOT NULL,
               position INTEGER NOT NULL,
               question_id VARCHAR NOT NULL,
               document_id VARCHAR NOT NULL,
               unit_id VARCHAR NOT NULL,
               title VARCHAR NOT NULL,
               text VARCHAR NOT NULL,
               found_by JSON NOT NULL,
               PRIMARY KEY (pool_id, question_id, document_id))""",
        "CREATE SEQUENCE judgment_ids START 1",
        """CREATE TABLE judgments (
               id BIGINT PRIMARY KEY DEFAULT nextval('judgment_ids'),
               collection VARCHAR NOT NULL,
               question_id VARCHAR NOT NULL,
               document_id VARCHAR NOT NULL,
               grade INTEGER NOT NULL CHECK (grade BETWEEN 0 AND 3),
               assessor VARCHAR NOT NULL,
               pool_id BIGINT,
               seconds DOUBLE,
               reasoning VARCHAR NOT NULL DEFAULT '',
               created TIMESTAMPTZ NOT NULL DEFAULT current_timestamp)""",
    )),
    (9, "which judgments an evaluation of a question set was last measured by, and the "
        "evaluation a pool was pooled from (engine/service/judged_evaluations.py)", (
        "ALTER TABLE evaluations ADD COLUMN judged_with VARCHAR",
        "ALTER TABLE pools ADD COLUMN evaluation_id BIGINT",
    )),
    (10, "whose work: the user who saved a run or started an evaluation, a label per pair "
         "per annotator (two people may label one pair), and the audit log of admin actions "
         "and refusals (engine/service/door.py, engine/store/audit.py)", (
        "ALTER TABLE runs ADD COLUMN owner VARCHAR NOT NULL DEFAULT ''",
        "ALTER TABLE evaluations ADD COLUMN owner VARCHAR NOT NULL DEFAULT ''",
        """CREATE TABLE labels_10 (
               id BIGINT PRIMARY KEY DEFAULT nextval('label_ids'),
               question VARCHAR NOT NULL,
               question_id VARCHAR NOT NULL DEFAULT '',
               d1_id VARCHAR NOT NULL,
               d1_title VARCHAR NOT NULL,
               d1_text VARCHAR NOT NULL,
               d2_id VARCHAR NOT NULL,
               d2_title VARCHAR NOT NULL,
               d2_text VARCHAR NOT NULL,
               texts_fingerprint VARCHAR NOT NULL,
               label INTEGER NOT NULL CHECK (label IN (0, 1)),
               source VARCHAR NOT NULL,
               annotator VARCHAR NOT NULL DEFAULT '',
               created TIMESTAMPTZ NOT NULL DEFAULT current_timestamp,
               UNIQUE (question, d1_id, d2_id, annotator))""",
        "INSERT INTO labels_10 SELECT * FROM labels",
        "DROP TABLE labels",
        "ALTER TABLE labels_10 RENAME TO labels",
        "CREATE SEQUENCE audit_ids START 1",
        """CREATE TABLE audit (
               id BIGINT PRIMARY KEY DEFAULT nextval('audit_ids'),
               happened TIMESTAMPTZ NOT NULL DEFAULT current_timestamp,
               username VARCHAR NOT NULL,
               role VARCHAR NOT NULL,
               action VARCHAR NOT NULL,
               allowed BOOLEAN NOT NULL,
               detail VARCHAR NOT NULL DEFAULT '')""",
    )),
    (11, "named presets: a paradigm with its settings, run by name (engine/store/presets.py)", (
        """CREATE TABLE presets (
               name VARCHAR PRIMARY KEY,
               paradigm VARCHAR NOT NULL,
               config JSON NOT NULL,
               source VARCHAR NOT NULL DEFAULT '',
               notes VARCHAR NOT NULL DEFAULT '',
               owner VARCHAR NOT NULL DEFAULT '',
               created TIMESTAMPTZ NOT NULL DEFAULT current_timestamp)""",
    )),
    (12, "tuning searches and their trials, so a search resumes (engine/store/tuning.py)", (
        "CREATE SEQUENCE tune_ids START 1",
        """CREATE TABLE tunes (
               id BIGINT PRIMARY KEY DEFAULT nextval('tune_ids'),
               name VARCHAR NOT NULL DEFAULT '',
               dataset VARCHAR NOT NULL,
               corpus VARCHAR NOT NULL,
               plan JSON NOT NULL,
               search_ids JSON NOT NULL,
               held_out_ids JSON NOT NULL,
               state VARCHAR NOT NULL DEFAULT 'running',
               error VARCHAR NOT NULL DEFAULT '',
               result JSON,
               preset VARCHAR NOT NULL DEFAULT '',
               owner VARCHAR NOT NULL DEFAULT '',
               created TIMESTAMPTZ NOT NULL DEFAULT current_timestamp,
               finished TIMESTAMPTZ)""",
        """CREATE TABLE tune_trials (
               tune_id BIGINT NOT NULL,
               number INTEGER NOT NULL,
               paradigm VARCHAR NOT NULL,
               state VARCHAR NOT NULL,
               trial JSON NOT NULL,
               PRIMARY KEY (tune_id, number))""",
    )),
    (13, "a preset keeps the corpus it was made over (engine/store/presets.py)", (
        "ALTER TABLE presets ADD COLUMN corpus VARCHAR NOT NULL DEFAULT ''",
    )),
    (14, "nuggets of a question set's questions, and answers' assignments to them "
         "(engine/store/nuggets.py)", (
        "CREATE SEQUENCE nugget_ids START 1",
        """CREATE TABLE nuggets (
               id BIGINT PRIMARY KEY DEFAULT nextval('nugget_ids'),
               collection VARCHAR NOT NULL,
               question_id VARCHAR NOT NULL,
               text VARCHAR NOT NULL,
               importance VARCHAR NOT NULL,
               author VARCHAR NOT NULL,
               sources JSON NOT NULL,
               replaced_by BIGINT,
               removed BOOLEAN NOT NULL DEFAULT false,
               created TIMESTAMPTZ NOT NULL DEFAULT current_timestamp)""",
        "CREATE SEQUENCE assignment_ids START 1",
        """CREATE TABLE nugget_assignments (
               id BIGINT PRIMARY KEY DEFAULT nextval('assignment_ids'),
               nugget_id BIGINT NOT NULL,
               evaluation_id BIGINT NOT NULL,
               question_id VARCHAR NOT NULL,
               paradigm VARCHAR NOT NULL,
               assignment VARCHAR NOT NULL,
               assessor VARCHAR NOT NULL,
               seconds DOUBLE,
               reasoning VARCHAR NOT NULL DEFAULT '',
               created TIMESTAMPTZ NOT NULL DEFAULT current_timestamp)""",
    )),
)
