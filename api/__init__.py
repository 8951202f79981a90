"""Interfaces for agents and applications: HTTP API and MCP server."""
