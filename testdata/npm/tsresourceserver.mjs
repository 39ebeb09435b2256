// A stdio MCP server on the official TypeScript SDK with one tool, one
// static resource (file:///secret.txt) and one resource template
// (file:///notes/{+path}): what the proxy's resources tests read through.
//
//   node tsresourceserver.mjs
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';

const server = new McpServer({ name: 'ts-resources', version: '1.0.0' });
server.registerTool('greet', { description: 'Say hello.' }, async () => ({ content: [{ type: 'text', text: 'hello' }] }));
server.registerResource('secret', 'file:///secret.txt', { description: 'A secret.' }, async (uri) => ({
  contents: [{ uri: uri.href, text: 'SECRET' }],
}));
server.registerResource(
  'notes',
  new ResourceTemplate('file:///notes/{+path}', { list: undefined }),
  { description: 'A note by path.' },
  async (uri) => ({ contents: [{ uri: uri.href, text: 'note ' + uri.pathname }] }),
);
await server.connect(new StdioServerTransport());
