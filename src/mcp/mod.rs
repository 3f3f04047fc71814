//! The Model Context Protocol: `tick mcp serve`, tick's own tasks as MCP tools for other
//! agents ([`serve`]).

pub mod serve;
