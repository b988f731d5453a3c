from stratbench.cli.main import main

main()
