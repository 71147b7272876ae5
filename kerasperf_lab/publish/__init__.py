"""Publishing: the article's views of results files (``article``, ``article_render``,
``families``, ``comparable``), their PNG charts (``charts``), and
``kerasperf publish``'s HTML page (``publish`` and ``publish_prs``: its inputs;
``html_figures``, ``html_prs``, ``html_page``: the page); ``command``: the commands."""
