from stratbench.cli.entry import run

run()
