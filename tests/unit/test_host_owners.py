"""Owner records on ssh: hosts (hosts/host_owners.py): the record's text, its parser (hostile inputs), and the
folders a record may name for removal."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from layerbench.hosts.host_owners import RECORD_MARK, HostRecord, host_record, parse_records, record_text, safe_folder
from layerbench.hosts.inventory import Host, HostEntry

LEASE = "/var/tmp/lblab-db/leases/" + "ab" * 12 + ".lock"


def listing(*records: tuple[str, str]) -> str:
    return "".join(f"{RECORD_MARK} {file}\n{text}\n" for file, text in records)


def test_a_written_record_reads_back() -> None:
    host = Host("db", HostEntry(ssh="root@10.0.0.1", work_dir="/var/tmp/lb"))
    folder = "/var/tmp/lb/runs/c1-v-r1"
    file = host_record(host, folder)
    assert file == "/var/tmp/lb/owners/c1-v-r1.rec"
    assert parse_records(listing((file, record_text(LEASE, folder)))) == [HostRecord(file, LEASE, folder)]


def test_records_naming_no_folder_or_a_folder_not_theirs_are_left_out() -> None:
    good = ("/w/owners/n1.rec", record_text(LEASE, "/tmp/n1"))
    text = listing(good, ("/w/owners/n2.rec", f"lease={LEASE}\n"),
                   ("/w/owners/tmp.rec", record_text(LEASE, "/tmp")), ("/w/owners/x.rec", record_text(LEASE, "/tmp/y")),
                   ("/w/owners/up.rec", record_text(LEASE, "/a/../up")))
    assert [r.folder for r in parse_records("ssh banner\n" + text)] == ["/tmp/n1"]


def test_a_repeated_key_does_not_replace_the_first() -> None:
    text = listing(("/w/owners/n1.rec", record_text(LEASE, "/tmp/n1") + "folder=/tmp/other\nlease=/x\n"))
    assert parse_records(text) == [HostRecord("/w/owners/n1.rec", LEASE, "/tmp/n1")]


def test_only_a_folder_named_as_its_record_and_deep_enough_is_safe() -> None:
    assert safe_folder("/tmp/lb-n1", "/w/owners/lb-n1.rec")
    assert safe_folder("/var/tmp/lb/runs/7-a-b", "/w/owners/7-a-b.rec")
    for folder in ["/", "/tmp", "tmp/a", "/tmp//a", "/tmp/./a", "/tmp/a/", "/tmp/../a", "/tmp/b", "/tmp/a\n",
                   "//a/a"]:
        assert not safe_folder(folder, "/w/owners/a.rec"), folder
    assert not safe_folder("/tmp/..", "/w/owners/...rec")


@given(st.text(max_size=600))
def test_every_parsed_record_is_safe_whatever_the_host_says(text: str) -> None:
    for rec in parse_records(text):
        assert safe_folder(rec.folder, rec.file) and rec.folder not in ("/", "/tmp", "/var")
        assert ".." not in rec.folder.split("/")


@given(st.from_regex(r"[A-Za-z0-9_@+-][A-Za-z0-9_.@+-]{0,30}", fullmatch=True),
       st.sampled_from(["/tmp", "/var/tmp/lb/runs", "/srv/data"]))
def test_every_folder_a_harness_writes_reads_back(name: str, root: str) -> None:
    folder = f"{root}/{name}"
    host = Host("h", HostEntry(ssh="h", work_dir="/var/tmp/lb"))
    file = host_record(host, folder)
    assert parse_records(listing((file, record_text(LEASE, folder)))) == [HostRecord(file, LEASE, folder)]
