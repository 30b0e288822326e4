// quire-bench: measures Quire. Subcommands are filled in by the benchmark harness.
import QuireCore
print("usage: quire-bench trace FILE... [--runs N] [--json]")
