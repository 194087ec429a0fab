"""Issue 30: MCP scope membership of lcg's own tools is stated, and each such tool says so.

The reference's MCP page gives every scope's tools (its "Scopes" table, written here by hand).
lcg's scopes hold those and, beyond them, lcg's own tools (the source sync, pending
extraction, verify). Each scope's ``tools/list`` of a real ``lcg mcp --connect`` process (the
static method table, ADR 0143; no service needed) must be the reference's row plus lcg's own
tools, and exactly those own tools' descriptions start by saying they are lcg's own, so an
MCP client reading the list is told which tools a reference deployment would not have.
"""

from __future__ import annotations

import asyncio

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

import _service_fixtures as sf

#: The reference's Scopes table (its MCP page), by hand.
REFERENCE_SCOPES: dict[str, set[str]] = {
    "read": {
        "knowledge_status",
        "knowledge_find_entities",
        "knowledge_find_relationships",
        "knowledge_get_episodes",
        "knowledge_get_nodes_by_group",
        "knowledge_get_edges_by_group",
        "knowledge_get_edges_by_uuids",
        "knowledge_search_passages",
        "knowledge_list_entities",
        "knowledge_list_relationships",
        "knowledge_get_entity_neighbors",
        "knowledge_get_entities_by_source",
        "knowledge_rebuild_status",
        "knowledge_validate_corrections",
    },
    "write": {
        "knowledge_process_chunk",
        "knowledge_add_episode",
        "knowledge_delete_episode",
        "knowledge_delete_by_source",
        "knowledge_delete_chunk_episode",
        "knowledge_clear_all",
        "knowledge_apply_corrections",
        "knowledge_merge_entities",
        "knowledge_reprocess_entity_types",
        "knowledge_canonicalize_relations",
        "knowledge_backfill_relation_types",
        "knowledge_reprocess_relation_types",
        "knowledge_add_cross_group_edge",
        "knowledge_assert_entity",
        "knowledge_assert_relationship",
    },
    "cypher": {"knowledge_query_cypher"},
    "admin": {
        "knowledge_dump_wal",
        "knowledge_prepare_checkpoint",
        "knowledge_wal_mark_create",
        "knowledge_wal_mark_list",
        "knowledge_wal_mark_delete",
        "knowledge_rebuild_from_wal",
        "knowledge_recover",
        "knowledge_recover_full",
        # knowledge_close: hidden in attached mode without --allow-remote-close.
        "knowledge_build_indices",
        "knowledge_rebind_pointers",
        "knowledge_delete_by_group",
        "knowledge_backfill_summary_embeddings",
    },
}

#: lcg's own tools per scope, as docs/compatibility.md lists them.
OWN_SCOPES: dict[str, set[str]] = {
    "read": {
        "knowledge_source_manifest",
        "knowledge_sources",
        "knowledge_get_entities_by_uuids",
        "knowledge_get_episodes_by_uuids",
        "knowledge_get_document",
        "knowledge_get_entities_neighbors",
    },
    "write": {
        "knowledge_sync_chunks",
        "knowledge_declare_structure",
        "knowledge_source_register",
        "knowledge_source_remove",
        "knowledge_extract_pending",
    },
    "cypher": set(),
    "admin": {"knowledge_verify"},
}

OWN_NOTE = "lcg's own tool, not in the reference's scope table."


@pytest.mark.parametrize("scope", sorted(REFERENCE_SCOPES))
def test_each_scope_is_the_reference_row_plus_own_tools_that_say_so(scope: str) -> None:
    with sf.temp_workspace("lcg-own-") as ws:
        sock = ws / ".lcg" / "service.sock"  # absent: the list is the static table
        params = StdioServerParameters(
            command=str(sf.LCG),
            args=["mcp", "--connect", str(sock), "--scope", scope],
            env=sf.serve_env(),
            cwd=str(ws),
        )

        async def listed() -> dict[str, str]:
            with (ws / "mcp.log").open("a") as errlog:
                async with stdio_client(params, errlog=errlog) as (read, write):
                    async with ClientSession(read, write) as s:
                        await s.initialize()
                        tools = (await s.list_tools()).tools
            return {t.name: t.description or "" for t in tools}

        tools = asyncio.run(asyncio.wait_for(listed(), 120))
    assert set(tools) == REFERENCE_SCOPES[scope] | OWN_SCOPES[scope]
    said_own = {name for name, text in tools.items() if text.startswith(OWN_NOTE)}
    assert said_own == OWN_SCOPES[scope]
