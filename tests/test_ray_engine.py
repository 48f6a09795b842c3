"""`engine: ray` gives the rows the local engine gives, and fails in one line when it cannot start."""

import json

import polars as pl
import pyarrow as pa
import pytest

from pearl.artifacts import (CANDIDATES_SCHEMA, ShardedParquetWriter, PHRASES_SCHEMA, SENTENCES_SCHEMA, TEACHER_VECTORS_SCHEMA,
                             TYPED_PHRASES_SCHEMA, VARIANTS_SCHEMA, read_artifact)
from pearl.corpus import stage as corpus_stage
from pearl.entity_typing import stage as typing_stage
from pearl.errors import PearlError
from pearl.parse import stage as parse_stage
from tests.test_parse_stage import SENTENCES


@pytest.fixture
def running_ray(make_params):
    """A Ray of 2 CPUs, what these tests ask for, started once per worker and left running: ray_session uses it,
    so that each stage does not pay Ray's start and stop (6 s on a 2-core CI machine)."""
    import ray

    from pearl.ray_engine import start_ray

    if not ray.is_initialized():
        start_ray(make_params(ray__num_cpus=2).ray)
    return ray


@pytest.fixture
def no_running_ray():
    """For the tests of Ray's start: the stage starts its own. They come last in this module, so that the
    tests before them share one Ray."""
    import ray

    ray.shutdown()


def _shards(path):
    return [shard["rows"] for shard in json.loads((path / "manifest.json").read_text())["shards"]]


@pytest.mark.slow
def test_parse_and_typing_on_ray_write_the_local_engines_rows_in_shards(make_params, tmp_path, running_ray):
    corpus = tmp_path / "sentences.parquet"
    sentences = SENTENCES * 3  # 21 sentences in batches of 4: both actors get work, and outputs interleave
    pl.DataFrame({"doc_id": ["d"] * len(sentences), "sent_id": range(len(sentences)), "text": sentences}
                 ).write_parquet(corpus)
    written = {}
    for engine in ("local", "ray"):
        params = make_params(engine=engine, parse__n_process=1, ray__num_cpus=2, ray__parse__batch_size=4,
                             ray__typing__batch_size=3, ray__shard_rows=5, bench__tasks=["simlex"], bench__tune_tasks=["rw"])
        phrases, typed = tmp_path / f"phrases_{engine}.parquet", tmp_path / f"typed_{engine}.parquet"
        parse_stage.run(params, source=corpus, output=phrases, metrics=tmp_path / f"parse_{engine}.json")
        typing_stage.run(params, source=phrases, output=typed, metrics=tmp_path / f"typing_{engine}.json",
                         evaluation=tmp_path / f"evaluation_{engine}.parquet")
        written[engine] = read_artifact(phrases, PHRASES_SCHEMA), read_artifact(typed, TYPED_PHRASES_SCHEMA)
    assert all(ray.equals(local) for ray, local in zip(written["ray"], written["local"]))
    shards = _shards(tmp_path / "phrases_ray.parquet")  # typing on Ray read parse's shards and wrote its own
    typed_shards = _shards(tmp_path / "typed_ray.parquet")  # less the phrases a scored task holds
    assert len(shards) > 1 and set(shards[:-1]) == {5} and sum(shards) == written["ray"][0].height
    assert len(typed_shards) == len(shards) and all(t <= p for t, p in zip(typed_shards, shards))
    dropped = json.loads((tmp_path / "typing_ray.json").read_text())["leak_dropped_phrases"]
    assert sum(typed_shards) == written["ray"][1].height == sum(shards) - dropped
    assert written["ray"][1].filter(pl.col("phrase") == "Paris")["ent_type"].to_list() == ["GPE"]


@pytest.mark.slow
def test_parse_with_nodes_reading_the_sentence_shards_counts_the_local_engines_phrases(make_params, tmp_path, running_ray):
    corpus = tmp_path / "sentences.parquet"
    sentences = [*SENTENCES * 3, "The old harbour of Oslo is cold."]  # its phrases occur once, below parse.min_freq
    _sentence_shards(corpus, sentences, shard_rows=4)  # 6 shards, read by Ray's tasks, none by the driver
    numbers = {}
    for engine in ("local", "ray"):
        params = make_params(engine=engine, parse__n_process=1, ray__num_cpus=2, ray__shared_storage=True,
                             ray__parse__batch_size=3, ray__parse__workers=2)
        phrases = tmp_path / f"phrases_{engine}.parquet"
        numbers[engine] = parse_stage.run(params, source=corpus, output=phrases, metrics=tmp_path / f"{engine}.json")
    assert read_artifact(tmp_path / "phrases_ray.parquet", PHRASES_SCHEMA).equals(
        read_artifact(tmp_path / "phrases_local.parquet", PHRASES_SCHEMA))
    assert numbers["ray"] == numbers["local"] and numbers["ray"]["sentences"] == len(sentences)
    assert numbers["ray"]["distinct_phrases"] > numbers["ray"]["phrases"]  # the shuffle's reduces drop the rare ones
    assert json.loads((tmp_path / "ray.json").read_text())["ray_nodes"] == 1


@pytest.mark.slow
def test_nodes_reading_the_shards_give_each_actor_call_one_batch(make_params, tmp_path, running_ray):
    """An actor takes whole blocks: Ray Data's default of a few large ones (blocks of 1 MB and more)
    left one of two actors parsing 3 blocks of 7,278 sentences while the other, done with 2, waited."""
    from pearl.artifacts import artifact_files
    from pearl.ray_engine import NodeFiles, RowActor, map_with_actors, ray_session

    class RowCounts(RowActor):
        def process(self, batch):
            return pa.table({"rows": [batch.num_rows]})

    corpus = tmp_path / "sentences.parquet"
    _sentence_shards(corpus, [f"{i} " + "word " * 200 for i in range(2000)], shard_rows=2000)  # 2 MB, one shard
    params = make_params(engine="ray", ray__num_cpus=2, ray__parse__batch_size=250)
    files, rows = artifact_files(corpus, SENTENCES_SCHEMA)
    with ray_session(params.ray) as run:
        calls = [n for out in map_with_actors(NodeFiles([str(file) for file in files], ["text"], rows), RowCounts, (),
                                              params.ray.parse, "parse", str(corpus), run)
                 for n in out["rows"].to_pylist()]
    assert sorted(calls) == [250] * 8


def _sentence_shards(path, sentences, shard_rows):
    with ShardedParquetWriter(path, corpus_stage.SCHEMA, shard_rows) as writer:
        writer.write({"doc_id": ["d"] * len(sentences), "sent_id": list(range(len(sentences))), "text": sentences})


@pytest.mark.slow
def test_the_corpus_streamed_through_ray_actors_gives_the_local_engines_rows_and_counts_in_shards(make_params, tmp_path, running_ray):
    documents = [  # a doc_id that comes back, an empty document, a sentence too short and one too long
        {"id": "a", "text": "Paris is the capital of France. It is large.\n\nBerlin is in Germany."},
        {"id": "a", "text": "Rome is old. Ok."}, {"id": "e", "text": " "}, {"id": "a", "text": "Oslo is cold."},
        *({"id": f"d{i}", "text": f"Document {i} is here. " + "Long " * (i % 3) * 500} for i in range(12)),
    ]
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in documents))
    written = {}
    for engine in ("local", "ray"):  # 16 documents in batches of 3 over 2 actors
        params = make_params(engine=engine, corpus__source="files", corpus__files=[str(tmp_path / "docs.jsonl")],
                             ray__num_cpus=2, ray__corpus__batch_size=3, ray__shard_rows=4)
        out = tmp_path / engine / "sentences.parquet"
        numbers = corpus_stage.run(params, output=out, metrics=tmp_path / f"{engine}.json")
        written[engine] = read_artifact(out, SENTENCES_SCHEMA), numbers
    assert written["ray"][0].equals(written["local"][0]) and written["ray"][1] == written["local"][1]
    assert written["ray"][1]["sentences_dropped_long"] == 8 and written["ray"][1]["sentences_dropped_short"] == 1
    assert _shards(tmp_path / "ray" / "sentences.parquet") == [4, 4, 4, 4, 1]  # 17 sentences in shards of ray.shard_rows
    metrics = json.loads((tmp_path / "ray.json").read_text())
    assert metrics["ray_nodes"] == 1 and metrics["ray_busy_seconds"] > 0
    strict = tmp_path / "strict" / "sentences.parquet"
    with pytest.raises(PearlError) as error:  # raised inside an actor, reported as the local engine does
        corpus_stage.run(make_params(engine="ray", corpus__source="files", corpus__files=[str(tmp_path / "docs.jsonl")],
                                     corpus__long_sentences="error", ray__num_cpus=2, ray__corpus__batch_size=3),
                         output=strict, metrics=tmp_path / "strict.json")
    assert str(error.value).startswith("corpus: document 'd1' has a sentence of 2") and "\n" not in str(error.value)
    assert list(strict.parent.iterdir()) == []


@pytest.mark.slow
def test_the_teacher_on_ray_writes_the_local_engines_vectors_bit_for_bit(make_params, tiny_encoder, tmp_path, running_ray):
    from pearl.teacher import stage as teacher_stage

    words = [f"{w}{'s' * (i % 5)}" for i, w in enumerate(["alpha", "beta", "gamma delta", "epsilon", "zeta eta theta"] * 9)]
    texts = list(dict.fromkeys(words + [f"{a} {b}" for a, b in zip(words, reversed(words))]))
    inputs = {name: tmp_path / f"{name}.parquet" for name in ("typed", "candidates", "variants")}
    pl.DataFrame({"phrase": texts, "label_id": [0] * len(texts)}).write_parquet(inputs["typed"])
    pl.DataFrame({"phrase": texts[:1], "candidate": ["omega"], "edit_sim": [0.5]}).write_parquet(inputs["candidates"])
    pl.DataFrame(schema={"phrase": pl.String, "level": pl.String, "method": pl.String, "variant": pl.String}
                 ).write_parquet(inputs["variants"])
    written = {}
    for engine in ("local", "ray"):  # batches of 4 texts, 8 per actor call: calls hold several batches
        params = make_params(engine=engine, model__teacher=str(tiny_encoder), teacher__batch_size=4,
                             ray__num_cpus=2, ray__teacher__batch_size=8)
        out = tmp_path / engine / "vectors.parquet"
        teacher_stage.run(params, inputs["typed"], inputs["candidates"], inputs["variants"], out, tmp_path / f"{engine}.json")
        written[engine] = read_artifact(out, TEACHER_VECTORS_SCHEMA)
    assert written["ray"].equals(written["local"]) and (tmp_path / "ray" / "vectors.parquet" / "manifest.json").is_file()
    assert json.loads((tmp_path / "ray.json").read_text())["engine"] == "ray"
    with pytest.raises(PearlError, match=r"ray\.teacher\.batch_size=6 must be a multiple of teacher\.batch_size=4"):
        teacher_stage.run(make_params(engine="ray", model__teacher=str(tiny_encoder), teacher__batch_size=4,
                                      ray__teacher__batch_size=6),
                          inputs["typed"], inputs["candidates"], inputs["variants"], tmp_path / "x" / "v.parquet",
                          tmp_path / "x.json")


def test_the_actors_make_the_local_embedders_encoder_calls(make_params, tiny_encoder, monkeypatch):
    """Each actor call holds whole batches of the local embedder's order (by tokens: the tiny tokenizer skips
    spaces, so characters give other batches), so every encoder call, and every float, is the local one.
    The actors run here, in this process, in the calls Ray would make."""
    from pearl import ray_encoding
    from pearl.embedder import Embedder
    from tests.test_embedder import TEXTS

    texts = list(dict.fromkeys(TEXTS))
    embedder = Embedder(str(tiny_encoder), "", 2, 64, "cpu")
    calls = []
    encode = embedder.model.encode
    monkeypatch.setattr(embedder.model, "encode", lambda batch, **kw: calls.append(list(batch)) or encode(batch, **kw))

    def actors_here(rows, actor, constructor_args, stage, name, source, run):
        worker = actor(*constructor_args)
        return (worker.process(rows.slice(start, stage.batch_size)) for start in range(0, rows.num_rows, stage.batch_size))

    monkeypatch.setattr(ray_encoding, "map_with_actors", actors_here)
    local = embedder.embed(texts)
    local_calls, calls[:] = list(calls), []
    on_actors = ray_encoding.encode_on_ray(texts, lambda: embedder, ("teacher.batch_size", 2),
                                           make_params(ray__teacher__batch_size=4).ray.teacher, "teacher", "t", None)
    assert calls == local_calls and len(calls) == 4
    assert on_actors.tobytes() == local.tobytes()


@pytest.mark.slow
def test_augment_with_its_heads_vectors_and_synonyms_from_ray_actors_writes_the_local_engines_rows(make_params, tiny_encoder, tmp_path, running_ray):
    from pearl.augment import stage as augment_stage

    # heads in groups of 5, 3, 2 and 1 (sorted by their ends): a phrase given another's head or vector mines other pairs
    phrases = sorted([*(f"the {adj} city" for adj in ("big", "large", "small", "old", "new")),
                      *(f"the {adj} river" for adj in ("long", "wide", "old")), "the red house", "the old house",
                      "the capital of France", "a famous painter", "abandon"], key=lambda p: p[::-1])
    typed, sentences = tmp_path / "typed.parquet", tmp_path / "sentences.parquet"
    pl.DataFrame({"phrase": phrases, "label_id": [0] * len(phrases)}).write_parquet(typed)
    texts = [f"We saw {p} and {q} again." for p, q in zip(phrases, reversed(phrases))] * 3
    pl.DataFrame({"doc_id": ["d"] * len(texts), "sent_id": range(len(texts)), "text": texts}).write_parquet(sentences)
    (tmp_path / "word-sim").mkdir()
    evaluation = tmp_path / "evaluation.parquet"  # the test and tune texts aliases must not touch
    pl.DataFrame({"text": ["desert", "leave"]}).write_parquet(evaluation)
    written = {}
    # batches of 4 phrases, 8 phrases or words per actor call: 2 calls over 2 actors, and the words' embedding
    # synonyms (nearly every word's 3 nearest) in 3 calls; Moby's synonyms of "abandon" judged by both encoders
    for engine in ("local", "ray"):
        params = make_params(engine=engine, model__backbone=str(tiny_encoder), augment__batch_size=4,
                             augment__mined_min_cos=0.5, augment__synonym_threshold=0.01, augment__synonym_topn=3,
                             augment__alias_sources=["moby"], augment__moby_min_cos=-1.0, model__teacher=str(tiny_encoder),
                             teacher__batch_size=4, train__p_alias=0.1, ray__num_cpus=2, ray__augment__batch_size=8)
        out = tmp_path / engine / "variants.parquet"
        augment_stage.run(params, source=typed, sentences=sentences, output=out, metrics=tmp_path / f"{engine}.json",
                          evaluation=evaluation)
        written[engine] = read_artifact(out, VARIANTS_SCHEMA)
    assert written["ray"].equals(written["local"])
    metrics = json.loads((tmp_path / "ray.json").read_text())
    assert metrics["engine"] == "ray" and metrics["ray_nodes"] == 1
    assert metrics["variants_mined"] > 0 and metrics["variants_embedding_synonym"] > 0 and metrics["alias_moby_kept"] == 3
    assert metrics["alias_moby_leak_dropped"] == 2  # abandon's synonyms desert and leave


@pytest.mark.slow
@pytest.mark.parametrize("search_on_ray", [False, True])
def test_candidate_pairs_scored_on_ray_give_the_local_engines_rows(search_on_ray, make_params, tmp_path, monkeypatch, running_ray):
    from pearl.negatives import candidates
    from pearl.negatives import stage as negatives_stage
    from tests.test_negatives import NYT_SET

    if search_on_ray:  # the inverted-file index and its search on actors, that 50K phrases and more take
        monkeypatch.setattr(candidates, "EXACT_BELOW", 0)
    phrases = tmp_path / "phrases.parquet"
    texts = NYT_SET + [f"{p} {i}" for i, p in enumerate(NYT_SET)]
    pl.DataFrame({"phrase": texts, "label_id": [0] * len(texts)}).write_parquet(phrases)
    written = {}
    for engine in ("local", "ray"):  # all 462 pairs are blocked (22 phrases < block_top_m): 13 batches, 2 actors
        params = make_params(engine=engine, ray__num_cpus=2, ray__candidates__batch_size=37)
        out = tmp_path / engine / "candidates.parquet"
        numbers = negatives_stage.run_candidates(params, source=phrases, output=out, metrics=tmp_path / f"{engine}.json")
        written[engine] = read_artifact(out, CANDIDATES_SCHEMA)
    assert written["ray"].equals(written["local"]) and numbers["pairs"] > 20
    assert json.loads((tmp_path / "ray.json").read_text())["ray_busy_seconds"] > 0


@pytest.mark.slow
def test_the_shared_word_join_after_a_ray_shuffle_finds_the_local_pairs(make_params, running_ray):
    from pearl.negatives import candidates
    from pearl.negatives.stage import shared_words_on_ray
    from pearl.ray_engine import ray_session
    from tests.test_negatives import _generated_phrases

    phrases = _generated_phrases(400)  # 17 words: keys held by many phrases, so the cap of 3 binds
    params = make_params(engine="ray", ray__num_cpus=2)
    with ray_session(params.ray) as run:  # 8 batches of 50 phrases, keys shuffled into 8 partitions
        rows, cols = shared_words_on_ray(params, "phrases.parquet", run)(phrases, 0.7 / 0.95, 3)
    local = candidates.shared_word_pairs(phrases, 0.7 / 0.95, 3)
    assert sorted(zip(rows.tolist(), cols.tolist())) == sorted(zip(*(side.tolist() for side in local)))
    assert len(rows) > 1000 and len(local[0]) < len(candidates.shared_word_pairs(phrases, 0.7 / 0.95, 400)[0])
    assert run.metrics()["ray_busy_seconds"] > 0
    assert running_ray.is_initialized()  # the process's own Ray: used, and left running for its owner


def test_an_actor_larger_than_the_cluster_fails_in_one_line(make_params, tmp_path, running_ray):
    corpus = tmp_path / "sentences.parquet"
    pl.DataFrame({"doc_id": ["d"], "sent_id": [0], "text": SENTENCES[:1]}).write_parquet(corpus)
    with pytest.raises(PearlError, match=r"ray\.parse\.cpus_per_worker"):
        parse_stage.run(make_params(engine="ray", ray__num_cpus=2, ray__parse__cpus_per_worker=3),
                        source=corpus, output=tmp_path / "p.parquet", metrics=tmp_path / "m.json")


@pytest.mark.slow
def test_a_row_that_makes_an_actor_raise_is_named_and_nothing_is_written(make_params, tmp_path, running_ray):
    corpus = tmp_path / "sentences.parquet"
    sentences = [*SENTENCES[:3], "a " * 600_000, *SENTENCES[3:]]  # row 3 is beyond spaCy's nlp.max_length
    pl.DataFrame({"doc_id": ["d"] * len(sentences), "sent_id": range(len(sentences)), "text": sentences}
                 ).write_parquet(corpus)
    with pytest.raises(PearlError) as error:
        parse_stage.run(make_params(engine="ray", ray__num_cpus=2, ray__parse__workers=1, ray__parse__batch_size=4),
                        source=corpus, output=tmp_path / "p.parquet", metrics=tmp_path / "m.json")
    message = str(error.value)
    assert message.startswith(f"{corpus}: row 3 (text='a a a") and "ValueError" in message and "\n" not in message
    assert "in the batch of rows 0–3" in message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sentences.parquet"]


def test_a_row_a_node_read_that_makes_an_actor_raise_is_named_with_its_shard_and_nothing_is_written(make_params, tmp_path, running_ray):
    corpus = tmp_path / "sentences.parquet"
    _sentence_shards(corpus, [*SENTENCES[:3], "a " * 600_000, *SENTENCES[3:]], shard_rows=3)
    with pytest.raises(PearlError) as error:
        parse_stage.run(make_params(engine="ray", ray__num_cpus=2, ray__shared_storage=True, ray__parse__workers=1,
                                    ray__parse__batch_size=4),
                        source=corpus, output=tmp_path / "p.parquet", metrics=tmp_path / "m.json")
    message = str(error.value)
    assert message.startswith(f"{corpus}: the row (text='a a a") and "\n" not in message
    assert f"of {(corpus / 'part-00001.parquet').resolve()} makes the actor raise ValueError" in message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sentences.parquet"]


@pytest.mark.slow
def test_the_verbs_on_ray_write_the_local_engines_bytes(tiny_encoder, tmp_path, running_ray):
    """embed, index build and add, link, join and cluster with --engine ray: their names encoded, and their
    searches run, by 2 actors on the running Ray, into the same files as --engine local."""
    from typer.testing import CliRunner

    from pearl.cli import app
    from pearl.index.encoder import load_encoder
    from pearl.ray_encoding import RayEncoding

    words = ["north", "river", "saint", "lake", "port", "new", "old", "upper", "fort", "bay"]
    names = [f"{a} {b}{'s' * (i % 3)} {i % 7}" for i, (a, b) in enumerate((a, b) for a in words for b in words)]
    misspelt = [name.replace("o", "0", 1).upper() if i % 2 else name[:-1] + "x" for i, name in enumerate(names)]
    pl.DataFrame({"name": names}).write_csv(tmp_path / "left.csv")
    pl.DataFrame({"name": misspelt}).write_csv(tmp_path / "right.csv")
    (tmp_path / "names.txt").write_text("\n".join(names[:60]) + "\n")
    pl.DataFrame({"name": [f"{name} annex" for name in names[:30]]}).write_csv(tmp_path / "more.csv")
    model, runner = str(tiny_encoder), CliRunner()
    for engine in ("local", "ray"):
        out = tmp_path / engine
        out.mkdir()
        ray_flags = ["--engine", engine, "--ray-workers", "2"]
        commands = [
            ["embed", "--model", model, "--input", str(tmp_path / "names.txt"), "--batch-size", "4",
             "--out", str(out / "v.npy")],  # 15 batches, in 2 actor calls of 8 batches
            ["index", "build", "--input", str(tmp_path / "left.csv"), "--column", "name", "--model", model,
             "--out", str(out / "idx")],
            ["index", "add", "--index", str(out / "idx"), "--input", str(tmp_path / "more.csv"), "--column", "name"],
            ["link", "--index", str(out / "idx"), "--input", str(tmp_path / "right.csv"), "--column", "name",
             "--k", "3", "--out", str(out / "links.csv")],
            ["join", str(tmp_path / "left.csv"), str(tmp_path / "right.csv"), "--left-on", "name", "--right-on", "name",
             "--model", model, "--how", "left", "--out", str(out / "joined.csv")],
            ["cluster", str(tmp_path / "right.csv"), "--column", "name", "--model", model, "--threshold", "0.9",
             "--out", str(out / "clusters.csv")],
        ]
        for command in commands:
            result = runner.invoke(app, command + ray_flags)
            assert result.exit_code == 0, result.output
    for name in ("v.npy", "idx/index.faiss", "idx/rows.parquet", "links.csv", "joined.csv", "clusters.csv"):
        assert (tmp_path / "ray" / name).read_bytes() == (tmp_path / "local" / name).read_bytes(), name
    # an actor call of one batch: every batch of the local order is an actor's
    encoder = load_encoder(model, batch_size=8)
    local = encoder.encode(misspelt + names[:5])
    encoder.ray = RayEncoding(workers=2, batches=1)
    assert encoder.encode(misspelt + names[:5]).tobytes() == local.tobytes()


def test_the_joins_candidate_search_on_ray_actors_finds_the_local_pairs(tiny_text_encoder, monkeypatch, running_ray):
    """With the encoder on Ray, the join's candidates are searched by kept actors, in batches dealt to both: the
    local engine's pairs, for left and right queries, and a right name that shares no 3-gram with any left one."""
    import numpy as np

    from pearl.joining import left_search, select
    from pearl.ray_encoding import RayEncoding

    monkeypatch.setattr(select, "SEARCH_ROWS", 16)  # the actors' batch: the 64 left names' queries in 4
    monkeypatch.setattr(left_search, "SEARCH_ROWS", 16)  # the local engine's blocks, as the actors get them
    words = ["north", "river", "saint", "lake", "port", "new", "old", "upper"]
    left = [f"{a} {b} {i % 5}" for i, (a, b) in enumerate((a, b) for a in words for b in words)]
    right = [name.replace("o", "0", 1).upper() for name in left[::2]] + ["qqq zzz"]
    local = select.Signals(left, right, tiny_text_encoder)
    ray = RayEncoding(workers=2)
    tiny_text_encoder.ray = ray
    try:
        on_ray = select.Signals(left, right, tiny_text_encoder)
        for rows, k in ((np.arange(len(left)), 5), (np.arange(len(left), len(left) + len(right)), 4)):
            expected = local.nearest_left(rows, k)
            assert [part.tolist() for part in on_ray.nearest_left(rows, k)] == [part.tolist() for part in expected]
        assert on_ray._actors is not None
    finally:
        tiny_text_encoder.ray = None
        ray.close()


@pytest.mark.slow
def test_pipelines_on_cpus_run_in_the_same_processes_each_building_its_actor_once(make_params, no_running_ray):
    """A pool of actors would start new processes for every pipeline, each importing the model libraries again
    (augment runs five pipelines): on CPUs, three pipelines run in no more processes than the Ray has CPUs."""
    import os

    from pearl.ray_engine import RowActor, map_with_actors, ray_session

    class WhereAmI(RowActor):
        def process(self, batch):
            return pa.table({"pid": [os.getpid()], "instance": [id(self)]})

    params = make_params(engine="ray", ray__num_cpus=2, ray__typing__batch_size=2)
    rows = pa.table({"x": list(range(16))})  # 8 batches
    with ray_session(params.ray) as run:  # a Ray of its own: no other test's workers
        pipelines = [pl.concat([pl.from_arrow(out) for out in map_with_actors(rows, WhereAmI, (), params.ray.typing,
                                                                              "typing", "x", run)])
                     for _ in range(3)]
    for calls in pipelines:
        assert calls.height == 8 and calls.n_unique() == calls["pid"].n_unique()  # one actor per process
    assert pl.concat(pipelines)["pid"].n_unique() <= 2


def test_an_address_where_no_ray_head_listens_fails_in_one_line(make_params, tmp_path, no_running_ray):
    corpus = tmp_path / "sentences.parquet"
    pl.DataFrame({"doc_id": ["d"], "sent_id": [0], "text": SENTENCES[:1]}).write_parquet(corpus)
    with pytest.raises(PearlError) as error:
        parse_stage.run(make_params(engine="ray", ray__address="127.0.0.1:1"), source=corpus,
                        output=tmp_path / "p.parquet", metrics=tmp_path / "m.json")
    assert "ray.address='127.0.0.1:1'" in str(error.value) and "\n" not in str(error.value)
    assert not (tmp_path / "p.parquet").exists()
