from closer.metered.cli import main

main()
