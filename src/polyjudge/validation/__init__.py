"""polyjudge.validation"""
