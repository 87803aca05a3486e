# SPDX-License-Identifier: MIT
"""Page descriptions: what is accepted, and clear errors for what is not."""

import json

import pytest

from confucius.web.page import FORMAT, Page, PageError, WebObject, page_from_dict, read_page, write_page


def _doc(*objects):
    return {"format": FORMAT, "id": "t", "objects": list(objects)}


def _obj(id, domain="a.test", size=10, parent=None):
    return {"id": id, "domain": domain, "size": size, "parent": parent}


def test_round_trip_and_depths(tmp_path):
    page = page_from_dict(_doc(_obj("r"), _obj("a", parent="r"), _obj("b", "b.test", 0, "a"), _obj("c", parent="r")))
    write_page(page, tmp_path / "p.json")
    again = read_page(tmp_path / "p.json")
    assert again == page
    assert again.depths() == {"r": 0, "a": 1, "b": 2, "c": 1}
    assert again.domains == ["a.test", "b.test"] and again.total_bytes == 30


def test_several_roots_are_requested_together():
    page = page_from_dict(_doc(_obj("x", "1.test"), _obj("y", "2.test")))
    assert set(page.depths().values()) == {0}


@pytest.mark.parametrize("doc, message", [
    (_doc(_obj("r"), _obj("a", parent="b"), _obj("b", parent="a")), "cycle"),
    (_doc(_obj("a", parent="a")), "cycle"),
    (_doc(_obj("r"), _obj("a", parent="zz")), "unknown parent 'zz'"),
    (_doc(_obj("r", size=-1)), "size must be a whole number"),
    (_doc(_obj("r", size=1.5)), "size must be a whole number"),
    (_doc(_obj("r", size=True)), "size must be a whole number"),
    (_doc(_obj("r"), _obj("r")), "appears twice"),
    (_doc(_obj("r", domain="")), "not a host name"),
    (_doc(_obj("r", domain="a b")), "not a host name"),
    (_doc(), "no objects"),
    (_doc({"id": "r", "domain": "a"}), "missing field(s) ['size']"),
    (_doc({"id": "r", "domain": "a", "size": 1, "colour": "red"}), "unknown field(s) ['colour']"),
    ({"format": "other/1", "id": "t", "objects": []}, "expected 'confucius-web-page/1'"),
    ([1, 2], "JSON object"),
])
def test_bad_pages_are_refused_with_the_reason(doc, message):
    with pytest.raises(PageError, match=None) as err:
        page_from_dict(doc)
    assert message in str(err.value)


def test_malformed_json_names_the_file(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"format": ')
    with pytest.raises(PageError, match="bad.json: not JSON"):
        read_page(path)
    with pytest.raises(PageError, match="cannot read"):
        read_page(tmp_path / "missing.json")


def test_pages_built_in_code_are_checked_too():
    with pytest.raises(PageError, match="unknown parent"):
        Page("p", (WebObject("a", "x.test", 1, "nope"),))


def test_written_file_is_the_documented_format(tmp_path):
    write_page(Page("p", (WebObject("a", "x.test", 5),)), tmp_path / "p.json")
    assert json.loads((tmp_path / "p.json").read_text()) == {
        "format": "confucius-web-page/1", "id": "p",
        "objects": [{"id": "a", "domain": "x.test", "size": 5, "parent": None}]}
