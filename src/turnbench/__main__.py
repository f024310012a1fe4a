from turnbench.cli import main

main()
