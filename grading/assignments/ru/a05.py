"""Задание 5 по-русски (grading/assignments/a05.py): пять сломанных Service — найти причину и починить."""
from grading.build_source import Translation

TRANSLATION = Translation(
    text={
        "c77466bb": "Задание 5: разбираемся со сломанными Service",
        "8a6d70c5": """
Пять Service сломаны, каждый — одним из способов, которыми Service ломаются в проде. Для каждого: выясните, что
не так, знакомыми инструментами (`lab.get`, `lab.curl`, `lab.nslookup`, `lab.get("events")`, `lab.kubectl(...)`,
`lab.proxy_rules()`), запишите в переменную диагноза одну из `CAUSES` и почините, применив исправленные объекты.
Запросы идут из пода `client` (`source="pod/client"`).

`CAUSES` — это `"selector"` (Service не выбирает ни одного пода), `"readiness"` (поды работают, но так и не
становятся Ready), `"targetPort"` (Service пересылает на порт, который никто не слушает), `"nodePort"` (порт уже
занят) и `"keep-alive"` (долгие соединения остаются на том поде, куда попали первыми).

Порядок проверки: есть ли у Service эндпоинты (`kubectl get endpointslices -l kubernetes.io/service-name=…`)?
Ни одного — сверьте его селектор с метками подов. Есть, но не готовы — смотрите readiness-пробу и события
`Unhealthy`. Готовы, но соединение отклонено (connection refused) — сверьте `targetPort` с портом, который
слушает контейнер.""",
        # Problem 1
        "438f88a0": """
## Проблема 1: `shop` (3 балла)

`lab.curl("http://shop/", source="pod/client")` не проходит. Запишите `diagnosis_shop` и почините `shop` так,
чтобы он отвечал с обоих своих подов.""",
        # Problem 2
        "438f14b6": """
## Проблема 2: `cart` (3 балла)

Поды `cart` в состоянии Running, а запросы всё равно не проходят. Запишите `diagnosis_cart` и почините (nginx
отдаёт `/` на порту 80). Исправленный Deployment выкатывает новые поды: дождитесь, пока два из них станут
готовыми эндпоинтами.""",
        # Problem 3
        "8aea6e45": """
## Проблема 3: `pay` (3 балла)

`nslookup pay` работает, и у `pay` два готовых эндпоинта, но `lab.curl("http://pay/hostname",
source="pod/client")` получает отказ. Запишите `diagnosis_pay` и почините, сохранив порт Service 80.""",
        # Problem 4
        "85a827b8": """
## Проблема 4: `admin` (4 балла)

Манифест команды `ADMIN_SVC` публикует Deployment `admin` на вашем NodePort (`task.taken_node_port`). Примените
его и поймайте отказ API-сервера (`from labsupport import Invalid`; `except Invalid as err`); сохраните его
сообщение в `admin_error` (`str(err)`). Затем запишите `diagnosis_admin` и создайте Service так, чтобы он ни с
чем не мог столкнуться (пусть порт выберет API-сервер). Он должен отвечать снаружи кластера на IP каждой ноды на
своём nodePort.""",
        # Problem 5
        "b99d5fab": """
## Проблема 5: `api` (3 балла)

`api` отмасштабировали с одного пода до вашего числа подов (`task.api_replicas`), но `conn.request()` (открытое
соединение клиента) всегда попадает на один и тот же под: попробуйте `Counter(conn.request().body for _ in
range(30))` (`from collections import Counter`). Запишите `diagnosis_api`. Затем почините сторону клиента:
закройте `conn` и сделайте по 30 запросов на под к `http://api/hostname` из `pod/client` так, чтобы kube-proxy
мог их распределить (каждый — своим соединением). Сохраните результаты этих запросов в том виде, в каком их
вернул `lab.curl`, в список `responses`, а ответы посчитайте по подам (`.body` у `/hostname` — имя пода) в словарь
`hits`.""",
    },
    code={
        "# A client keeps one HTTP connection open to api while it still has one pod; then api scales out.":
            "# Клиент держит одно HTTP-соединение с api, пока у того один под; затем api масштабируется.",
        'f"diagnosis_shop should be one of {CAUSES}"': 'f"diagnosis_shop должен быть одним из {CAUSES}"',
        'f"diagnosis_cart should be one of {CAUSES}"': 'f"diagnosis_cart должен быть одним из {CAUSES}"',
        'f"diagnosis_pay should be one of {CAUSES}"': 'f"diagnosis_pay должен быть одним из {CAUSES}"',
        'f"diagnosis_admin should be one of {CAUSES}"': 'f"diagnosis_admin должен быть одним из {CAUSES}"',
        'f"diagnosis_api should be one of {CAUSES}"': 'f"diagnosis_api должен быть одним из {CAUSES}"',
        "# where the pods listen: their --http-port": "# где слушают поды: их --http-port",
        '"keep the Service\'s port 80"': '"оставьте у Service порт 80"',
        '"admin cannot share legacy\'s nodePort"': '"admin не может делить nodePort с legacy"',
        '"legacy must keep its nodePort: moving it out of admin\'s way is not the fix, admin should take a free port"':
            '"legacy должен сохранить свой nodePort: убрать его с дороги admin — не решение, admin должен занять '
            'свободный порт"',
        '"hits should count answers by pod name (the body of /hostname)"':
            '"hits должен считать ответы по имени пода (тело ответа /hostname)"',
        '"close the pinned connection"': '"закройте прилипшее соединение"',
    },
    # The API server's own message: the test looks for it as Kubernetes prints it.
    keep=('"provided port is already allocated"', '\'Service "admin" is invalid\''),
)
