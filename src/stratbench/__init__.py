"""stratbench: how well do language models, above all raw base models, play strategic games?"""

__version__ = "0.1.0"
