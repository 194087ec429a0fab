"""A battery of queries that stress Kuzu's execution, against a real ``lcg serve`` (issue 23
item 3): out-of-range dates, intervals and timestamps, huge lists and ranges, long strings,
overflowing numbers, cartesian products and deep variable-length paths. Several crash Kuzu
(SIGSEGV), take gigabytes or ignore its timeout when run in-process; here every one answers
— rows or an error — before a generous socket timeout (the hang signal: run past their 1 s
limit, several would take hours), ``health_check`` answers after each, and the memory of the
service and its Cypher processes is back under its baseline + 100 MB after. How fast the
sandbox stops a query is timed by ``make bench``, never here: a bound on a loaded machine
flakes (it failed at 3.07 s and 3.14 s against a 3.0 s bound, ADR 0222).
"""

from __future__ import annotations

import pytest

import _cypher_support as cs
import _service_fixtures as sf

TIMEOUT_MS = 1000
#: How long the test waits for one answer before it calls the query hung (not a measurement).
HANG_S = 60.0
ENV = {"LCG_CYPHER_TIMEOUT_MS": str(TIMEOUT_MS), "LCG_CYPHER_MEMORY_MB": "1024"}

BATTERY = [
    # dates, intervals, timestamps
    "RETURN to_timestamp(9223372036854)",
    "RETURN to_timestamp(-9223372036854)",
    "RETURN date('2020-01-01') + interval('999999999 days')",
    "RETURN date('9999-12-31') + interval('1 day')",
    "RETURN date('0001-01-01') - interval('1 day')",
    "RETURN timestamp('9999-12-31 23:59:59') + interval('1000 years')",
    "RETURN timestamp('2020-01-01') + interval('-999999999 days')",
    "RETURN date_part('year', date('2020-01-01') + interval('99999999 months'))",
    "RETURN make_date(2147483647, 12, 31)",
    "RETURN date('2020-01-01') - date('0001-01-01')",
    "RETURN date_trunc('month', date('9999-12-31') + interval('40 days'))",
    "RETURN century(timestamp('9999-12-31 23:59:59'))",
    "RETURN to_days(2147483647)",
    "RETURN to_years(999999999)",
    "RETURN last_day(date('9999-12-31'))",
    "RETURN epoch_ms(9223372036854775807)",
    "RETURN interval('999999999999 microseconds') * 1000000",
    # lists and ranges
    "RETURN size(range(1, 10000000))",
    "UNWIND range(1, 2000000000) AS x RETURN count(x)",
    "RETURN list_sum(range(1, 100000000))",
    "RETURN range(1, 10, 0)",
    "RETURN range(9223372036854775800, 9223372036854775807)",
    "RETURN list_concat(range(1, 1000000), range(1, 1000000))[2000000]",
    "RETURN [x IN range(1, 10000000) WHERE x % 2 = 0 | x * x][1]",
    "RETURN list_element([1, 2, 3], 9223372036854775807)",
    "RETURN list_slice(range(1, 10), -9223372036854775807, 9223372036854775807)",
    "RETURN list_reverse(range(1, 50000000))[1]",
    "RETURN list_sort(range(1, 5000000), 'DESC')[1]",
    "UNWIND range(1, 100000000) AS x RETURN collect(x)[1]",
    # strings
    "WITH repeat('a', 100000) AS a, repeat('b', 100000) AS b RETURN levenshtein(a, b)",
    "RETURN size(repeat('x', 2000000000))",
    "RETURN repeat('ab', 100000000) CONTAINS 'c'",
    "RETURN lpad('x', 2147483647, 'y') = ''",
    "RETURN substring('abc', 9223372036854775807, 9223372036854775807)",
    "RETURN regexp_matches(repeat('a', 100000), '(a*)*b')",
    "RETURN jaro_winkler_similarity(repeat('a', 50000), repeat('b', 50000))",
    "RETURN string_split(repeat('a,', 10000000), ',')[1]",
    "RETURN upper(repeat('ß', 10000000)) = ''",
    # numbers
    "RETURN 9223372036854775807 + 1",
    "RETURN -9223372036854775808 / -1",
    "RETURN 1 / 0",
    "RETURN factorial(100)",
    "RETURN pow(10.0, 400)",
    "RETURN abs(-9223372036854775808)",
    "RETURN cast('99999999999999999999999' AS INT128) * cast('99999999999999999999999' AS INT128)",
    # cartesian products, paths
    "MATCH (a:Entity), (b:Entity), (c:Entity), (d:Entity) RETURN count(*)",
    "MATCH p = (a:Entity)-[:RELATES_TO*1..30]-(b:Entity) RETURN count(p)",
    "MATCH (a:Entity)-[r*1..30]-(b) RETURN count(*)",
    "MATCH p = (a:Entity)-[* SHORTEST 1..30]-(b:Entity) RETURN count(p)",
    "MATCH p = (a:Entity)-[:RELATES_TO* ALL SHORTEST 1..30]-(b:Entity) RETURN count(p)",
    "UNWIND range(1, 100000) AS a UNWIND range(1, 100000) AS b RETURN count(*)",
    "MATCH (a:Entity) UNWIND range(1, 1000000) AS x WITH a, x MATCH (b:Entity) RETURN count(*)",
    "MATCH (a:Entity), (b:Entity) WHERE levenshtein(repeat(a.name, 20000), "
    "repeat(b.name, 20000)) > 0 RETURN count(*)",
    "MATCH (a:Entity), (b:Entity), (c:Entity) WITH a, b, c UNWIND range(1, 100000) AS x "
    "RETURN count(*)",
    # ordinary reads in between still answer rows
    "MATCH (e:Entity) RETURN count(e)",
    "MATCH (a:Entity)-[:RELATES_TO]->(r:RelatesToNode_)-[:RELATES_TO]->(b:Entity) "
    "RETURN a.name, r.name, b.name ORDER BY a.name, b.name",
]


@pytest.mark.long
def test_the_battery_never_takes_the_service_down() -> None:
    assert len(BATTERY) >= 50
    with cs.served(ENV) as svc:
        assert svc.conn.result("knowledge_query_cypher", {"query": BATTERY[-2]})["rows"] == [["6"]]
        baseline = cs.settled_tree_rss_kb(svc.proc.pid)
        outcomes: dict[str, int] = {}
        with sf.RawConnection(svc.socket, timeout=HANG_S) as conn:
            for query in BATTERY:
                try:
                    answer = conn.request("knowledge_query_cypher", {"query": query})
                except TimeoutError:
                    raise AssertionError(f"no answer in {HANG_S} s: {query}") from None
                kind = "rows" if "result" in answer else "error"
                if kind == "error":  # an error says what went wrong
                    assert answer["error"]["message"], answer
                outcomes[kind] = outcomes.get(kind, 0) + 1
                assert svc.healthy(), query
        after = cs.settled_tree_rss_kb(svc.proc.pid)
        print(f"\nbattery: {outcomes}, RSS {baseline // 1024} MB -> {after // 1024} MB")
        assert after < baseline + 100 * 1024, (baseline, after)
        rows = svc.conn.result("knowledge_query_cypher", {"query": BATTERY[-1]})["rows"]
        assert len(rows) == len(cs.LINKS)
