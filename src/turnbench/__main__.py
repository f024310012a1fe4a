from turnbench.entry import main

main()
