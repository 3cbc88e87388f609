"""An upstream MCP server (the official Python SDK) whose tool says more while it runs than in its
result: its progress messages and log messages carry a cloud key, a private key and an IBAN, and
it asks the client's model (sampling) about a private key.
The gateway must judge them as it judges the tool's result (tests/mcp/interim.py checks it).

Over stdio.
"""

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("interim")

CLOUD_KEY = "AKIAIOSFODNN7EXAMPLE"
PRIVATE_KEY = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7f3aInterimSecretBody\n-----END RSA PRIVATE KEY-----"
)
IBAN = "DE44 5001 0517 5407 3249 31"


@server.tool(description="Works in three steps, saying what it found at each.")
async def work(ctx: Context) -> str:
    await ctx.report_progress(1, 3, f"found the key {CLOUD_KEY} in the config")
    await ctx.report_progress(2, 3, f"found {PRIVATE_KEY}")
    await ctx.report_progress(3, 3, f"the invoice says: pay {IBAN}")
    # A card number as the progress itself.
    await ctx.report_progress(4111111111111111, None, "almost")
    await ctx.info(f"key in use: {CLOUD_KEY}")
    await ctx.info(f"key file: {PRIVATE_KEY}")
    await ctx.info("named logger", logger_name=f"svc-{CLOUD_KEY}")
    await ctx.info("finished")
    return "done"


@server.tool(description="Asks the client's model to summarise a key file, and says what it answered.")
async def summarize(ctx: Context) -> str:
    from mcp_types import SamplingMessage, TextContent

    try:
        answer = await ctx.request_context.session.create_message(
            [SamplingMessage(role="user", content=TextContent(type="text", text=f"Summarise {PRIVATE_KEY}"))],
            max_tokens=50,
        )
    except Exception as error:  # noqa: BLE001 - the refusal is the answer the test reads
        return f"refused: {error}"
    return f"answered: {answer.content.text}"


@server.tool(description="Asks the client's model a plain question, and says what it answered.")
async def ask(ctx: Context) -> str:
    from mcp_types import SamplingMessage, TextContent

    answer = await ctx.request_context.session.create_message(
        [SamplingMessage(role="user", content=TextContent(type="text", text="What day is it?"))],
        max_tokens=50,
    )
    return f"answered: {answer.content.text}"


@server.tool(description="Pays an IBAN.")
async def pay(iban: str) -> str:
    return "paid"


if __name__ == "__main__":
    server.run()
