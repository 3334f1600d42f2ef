from .dataset import get_dataset, get_statistics


__all__ = ['get_dataset', 'get_statistics']
