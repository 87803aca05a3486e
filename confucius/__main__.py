# SPDX-License-Identifier: MIT
from confucius.cli import main

main()
