"""Equal answers are stored once per control (issue 24.1), but a span keeps its own task's
words: spans compare without their text snippet, so two tasks' spans at equal offsets are
equal values whose snippets differ."""
from __future__ import annotations

from ls_agreement.adapters.adapt import adapt

CONFIG = """<View><Text name="text" value="$text"/>
<Labels name="ner" toName="text"><Label value="PER"/></Labels></View>"""


def _task(tid: int, text: str) -> dict:
    name = text.split(" met ")[0]
    result = [{"from_name": "ner", "to_name": "text", "type": "labels",
               "value": {"start": 0, "end": len(name), "text": name, "labels": ["PER"]}}]
    return {"id": tid, "data": {"text": text},
            "annotations": [{"id": 10 * tid + k, "completed_by": k, "result": result} for k in (1, 2)]}


def test_a_span_keeps_its_own_tasks_words() -> None:
    tasks = [_task(1, "Alice Roth met Bob."), _task(2, "Farid Khan met Eve.")]
    table = adapt(CONFIG, tasks).controls["ner"].table
    words = {(str(i), str(a)): v[0].text for i, a, v in zip(table["item"], table["annotator"], table["value"])}
    assert words == {("1", "1"): "Alice Roth", ("1", "2"): "Alice Roth",
                     ("2", "1"): "Farid Khan", ("2", "2"): "Farid Khan"}
    # the two answers on one task are still one stored value
    same = table[table["item"].astype(str) == "2"]["value"].tolist()
    assert same[0] is same[1]
