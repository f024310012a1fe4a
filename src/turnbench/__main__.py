from turnbench.cli.entry import main

main()
