-- A campaign store made by polyjudge before issue 48 (schema version 1: no item_meta table).
BEGIN TRANSACTION;
CREATE TABLE annotations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    annotator TEXT NOT NULL REFERENCES annotators(name),
    item INTEGER NOT NULL REFERENCES items(id),
    version INTEGER NOT NULL,          -- 1, 2, ...: earlier versions are the history, the newest counts
    body TEXT NOT NULL,                -- JSON: spans, no_error, score, choice, choices
    created REAL NOT NULL,
    UNIQUE (annotator, item, version)
);
INSERT INTO "annotations" VALUES(1,'ana',0,1,'{"choice": null, "choices": null, "no_error": false, "score": null, "spans": [{"category": "Accuracy/Mistranslation", "end": 7, "severity": "major", "start": 4}]}',1.79662402231603598587e+09);
CREATE TABLE annotators (name TEXT PRIMARY KEY, token TEXT NOT NULL UNIQUE, ord INTEGER NOT NULL);
INSERT INTO "annotators" VALUES('ana','qfxgcq4XYdncWypMJNwDem9Q4OivYULE',0);
CREATE TABLE assignments (
    annotator TEXT NOT NULL REFERENCES annotators(name),
    position INTEGER NOT NULL,
    item INTEGER NOT NULL REFERENCES items(id),
    PRIMARY KEY (annotator, position), UNIQUE (annotator, item)
);
INSERT INTO "assignments" VALUES('ana',0,0);
INSERT INTO "assignments" VALUES('ana',1,1);
CREATE TABLE items (
    id INTEGER PRIMARY KEY,            -- 0-based order of the items as read
    item_id TEXT NOT NULL UNIQUE,      -- the key exports and ratings use (see campaign.item_key)
    src TEXT NOT NULL, tgt TEXT NOT NULL,
    src_lang TEXT NOT NULL, tgt_lang TEXT NOT NULL,
    system TEXT NOT NULL, doc_id TEXT NOT NULL, seg_id TEXT NOT NULL,
    judge_score REAL,                  -- the judge run's score (sampled campaigns), else NULL
    sampled INTEGER NOT NULL           -- 1: shown to annotators; 0: judged only (PPI's unlabelled items)
);
INSERT INTO "items" VALUES(0,'sysA:doc1:1','猫坐在垫子上。','The cat sat on the mat.','zh','en','sysA','doc1','1',NULL,1);
INSERT INTO "items" VALUES(1,'sysA:doc1:2','狗也在。','The dog too.','zh','en','sysA','doc1','2',NULL,1);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO "meta" VALUES('name','v1');
INSERT INTO "meta" VALUES('scheme','mqm');
INSERT INTO "meta" VALUES('per_item','1');
INSERT INTO "meta" VALUES('task','');
INSERT INTO "meta" VALUES('sampling','{}');
INSERT INTO "meta" VALUES('created','1796624022.3109863');
DELETE FROM "sqlite_sequence";
INSERT INTO "sqlite_sequence" VALUES('annotations',1);
COMMIT;
