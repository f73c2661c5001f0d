"""polyjudge.engine"""
